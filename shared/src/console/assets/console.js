// The console's one script (no framework, no build step). Everything works without it
// except the upload progress bar; it adds copy buttons and confirmations.
"use strict";
(function () {
  // Copy buttons: <button data-copy="element-id">.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) return;
    event.preventDefault();
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent.trim();
    var done = function () { button.textContent = "Copied"; setTimeout(function () { button.textContent = "Copy"; }, 2000); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { select(source); });
    } else { select(source); }
  });
  function select(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  // Forms that need a second thought: <form data-confirm="question">.
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();

// ----- Upload page (console/upload.rs) -----
// The upload flow from the browser: create the upload (POST /console/uploads
// with the page's CSRF token), PUT the file to the returned URL with XMLHttpRequest so
// the transfer reports progress (the bar's first half), then poll the upload every second
// (the second half) until it is done or failed. Does nothing on other pages.
(function () {
  var form = document.getElementById("upload-form");
  var kind = document.getElementById("upload-kind");
  var file = document.getElementById("upload-file");
  var start = document.getElementById("upload-start");
  var bar = document.getElementById("upload-progress");
  var status = document.getElementById("upload-status");
  if (!form || !kind || !file || !start || !bar || !status) return;
  var main = document.querySelector("main[data-csrf]");
  var csrf = main ? main.getAttribute("data-csrf") : "";

  function show(state, percent, text, link) {
    status.setAttribute("data-state", state);
    bar.setAttribute("data-state", state);
    status.textContent = text;
    if (link) {
      var see = document.createElement("a");
      see.href = link.href;
      see.textContent = link.text;
      status.appendChild(document.createTextNode(" "));
      status.appendChild(see);
    }
    if (percent !== null) {
      bar.value = percent;
      bar.textContent = percent + " %";
    }
  }
  function fail(text) {
    show("failed", null, "Upload failed: " + text);
    start.disabled = false;
  }
  // A JSON answer of the console's upload endpoints: {ok, body}.
  function answer(response) {
    return response.json().then(
      function (body) { return { ok: response.ok, body: body }; },
      function () { return { ok: false, body: { msg: "the server answered " + response.status } }; }
    );
  }
  function problem(body, fallback) {
    return (body && body.msg) || fallback;
  }

  // The page's own list of recent uploads, fetched again once an upload has finished.
  function refreshRecent() {
    var section = document.getElementById("recent-uploads");
    if (!section || !window.DOMParser) return;
    fetch("/console/upload", { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (text) {
        if (!text) return;
        var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("recent-uploads");
        if (fresh) section.innerHTML = fresh.innerHTML;
      })
      .catch(function () {});
  }

  function poll(id) {
    fetch("/console/uploads/" + encodeURIComponent(id), { credentials: "same-origin" })
      .then(answer)
      .then(function (reply) {
        if (!reply.ok) return fail(problem(reply.body, "the upload's status could not be read"));
        var record = reply.body.data;
        if (record.status === "done") {
          var counts = record.readings;
          var said = "Done: " + record.rows_written + " rows written";
          if (counts) {
            said = "Done: " + record.rows_written + " rows written: " + counts.new + " new";
            if (counts.already_there) said += ", " + counts.already_there + " already there";
            if (counts.replaced) said += ", " + counts.replaced + " replaced an earlier value";
            if (counts.merged_in_file) said += ", " + counts.merged_in_file + " repeated rows kept once";
          }
          var genome = kind.value === "genotype";
          show("done", 100, said + ".", {
            href: genome ? "/console/genome" : "/console/data",
            text: genome ? "See your genome" : "See your data"
          });
          start.disabled = false;
          refreshRecent();
          return;
        }
        if (record.status === "failed") {
          var error = record.error || {};
          var where = error.line ? " at line " + error.line : "";
          show("failed", null, "Import failed" + where + ": " + (error.message || "unknown error"));
          start.disabled = false;
          refreshRecent();
          return;
        }
        var percent = Math.min(99, 50 + Math.floor((record.progress || 0) * 50));
        show("importing", percent, "Step 2 of 2, importing: " + (record.rows_read || 0) + " rows read");
        setTimeout(function () { poll(id); }, 1000);
      })
      .catch(function () { fail("the server could not be reached"); });
  }

  function transfer(upload, chosen) {
    var xhr = new XMLHttpRequest();
    xhr.open(upload.method || "PUT", upload.upload_url);
    var headers = upload.headers || {};
    Object.keys(headers).forEach(function (name) { xhr.setRequestHeader(name, headers[name]); });
    xhr.upload.onprogress = function (event) {
      if (!event.lengthComputable || event.total === 0) return;
      var sent = Math.floor((event.loaded / event.total) * 100);
      show("transferring", Math.floor(sent / 2), "Step 1 of 2, sending the file: " + sent + " %");
    };
    xhr.onload = function () {
      if (xhr.status < 200 || xhr.status >= 300) {
        var body = null;
        try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
        return fail(problem(body, "the file was refused (" + xhr.status + ")"));
      }
      show("importing", 50, "Step 2 of 2, importing: the file arrived");
      poll(upload.id);
    };
    xhr.onerror = function () { fail("the file could not be sent (network error)"); };
    xhr.send(chosen);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var chosen = file.files && file.files[0];
    if (!chosen) {
      show("idle", 0, "Choose a file first.");
      return;
    }
    start.disabled = true;
    show("transferring", 0, "Step 1 of 2, sending the file: 0 %");
    // On a phone the bar and its words are below the fold: bring them into view.
    if (bar.scrollIntoView) bar.scrollIntoView({ block: "center", behavior: "smooth" });
    fetch("/console/uploads", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", "x-csrf-token": csrf },
      // The size is signed into the PUT: no other size is taken.
      body: JSON.stringify({ kind: kind.value, filename: chosen.name, size: chosen.size })
    })
      .then(answer)
      .then(function (reply) {
        if (!reply.ok) return fail(problem(reply.body, "the upload could not be created"));
        transfer(reply.body.data, chosen);
      })
      .catch(function () { fail("the server could not be reached"); });
  });
})();

// ----- Indicator charts (console/chart.rs) -----
// A value on hover and on tap: each point of a chart carries its words (data-label);
// the point nearest the pointer is marked and its words shown in the figure's read-out.
// Without the script the chart, its description and the latest readings still say it all.
(function () {
  Array.prototype.forEach.call(document.querySelectorAll("figure.chart"), function (figure) {
    var svg = figure.querySelector("svg.chart");
    var readout = figure.querySelector("p.readout");
    if (!svg || !readout) return;
    var points = Array.prototype.slice.call(svg.querySelectorAll("circle[data-label]"));
    if (points.length === 0) return;
    var xs = points.map(function (point) { return parseFloat(point.getAttribute("cx")); });
    var width = svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 720;
    var marked = null;
    function nearest(x) {
      var low = 0, high = xs.length - 1;
      while (low < high) {
        var middle = (low + high) >> 1;
        if (xs[middle] < x) low = middle + 1; else high = middle;
      }
      if (low > 0 && x - xs[low - 1] < xs[low] - x) low -= 1;
      return points[low];
    }
    function show(event) {
      var box = svg.getBoundingClientRect();
      if (box.width === 0) return;
      var point = nearest((event.clientX - box.left) * width / box.width);
      if (point === marked) return;
      if (marked) marked.classList.remove("on");
      point.classList.add("on");
      marked = point;
      readout.textContent = point.getAttribute("data-label");
    }
    svg.addEventListener("pointermove", show);
    svg.addEventListener("pointerdown", show);
  });
})();
