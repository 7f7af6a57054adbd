// Preload (`node --import ./loopback.mjs …`): a server started with only a port listens
// on 127.0.0.1 instead of every interface. The end-to-end tests run third-party servers
// (server-everything binds every interface by default) and must stay on loopback.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const bare = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (bare && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
