//! The OAuth clients a user authorised: `GET /api/user/oauth-grants` lists them
//! (client id, name, scope, when), `DELETE /api/user/oauth-grants/{client_id}` withdraws
//! one: that client's access tokens and refresh families issued until then end (the
//! user's token state keeps when; the bearer check and the refresh grant read it).
//!
//! The handlers only: the typed cores are `AccountApi::oauth_grants` and
//! `AccountApi::end_client_grant`, which the console's access page calls too. The routes
//! stand behind the authorization server's door (`App::oauth_grants`). First-party
//! sessions only (the route table's `accepts`). Never logs a token.

use serde_json::{Value, json};

use super::accounts::AccountApi;
use crate::http::{ApiError, Success};
use crate::identity::Caller;

impl AccountApi {
    /// `GET /api/user/oauth-grants`: the clients the caller authorised, oldest first.
    pub(crate) async fn list_oauth_grants(&self, caller: &Caller) -> Result<Success, ApiError> {
        let grants: Vec<Value> = self
            .oauth_grants(&caller.user_id)
            .await?
            .into_iter()
            .map(|(client_id, grant)| {
                json!({
                    "client_id": client_id,
                    "client_name": grant.client_name,
                    "scope": grant.scope,
                    "granted_at": grant.granted_at,
                })
            })
            .collect();
        Ok(Success::ok(json!({ "grants": grants })))
    }

    /// `DELETE /api/user/oauth-grants/{client_id}`: ends the client's tokens and refresh
    /// families; `revoked` says whether it was listed (it is withdrawn either way, so a
    /// grant that fell off the list can still be ended).
    pub(crate) async fn withdraw_oauth_grant(
        &self,
        caller: &Caller,
        client_id: &str,
    ) -> Result<Success, ApiError> {
        let listed = self
            .oauth_grants(&caller.user_id)
            .await?
            .iter()
            .any(|(id, _)| id == client_id);
        self.end_client_grant(&caller.user_id, client_id).await?;
        Ok(Success::ok(
            json!({ "client_id": client_id, "revoked": listed }),
        ))
    }
}
