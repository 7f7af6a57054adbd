//! The OAuth clients a user authorised: `GET /api/user/oauth-grants` lists them
//! (client id, name, scope, when), `DELETE /api/user/oauth-grants/{client_id}` withdraws
//! one: that client's access tokens and refresh families issued until then end (the
//! user's token state keeps when; the bearer check and the refresh grant read it).
//!
//! First-party sessions only (the route table's `accepts`). Never logs a token.

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::json;

use super::OAuthApi;
use crate::http::{ApiError, ok};
use crate::identity::Caller;
use crate::store::TokenChange;

impl OAuthApi {
    /// `GET /api/user/oauth-grants`: the clients the caller authorised, oldest first.
    pub(crate) async fn grants(&self, caller: &Caller) -> Result<Response<Bytes>, ApiError> {
        let state = self.store.token_state(&caller.user_id).await?;
        let mut grants: Vec<_> = state.grants.into_iter().collect();
        grants.sort_by_key(|(id, grant)| (grant.granted_at, id.clone()));
        let grants: Vec<_> = grants
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
        Ok(ok(StatusCode::OK, json!({ "grants": grants })))
    }

    /// `DELETE /api/user/oauth-grants/{client_id}`: ends the client's tokens and refresh
    /// families; `revoked` says whether it was listed (it is withdrawn either way, so a
    /// grant that fell off the list can still be ended).
    pub(crate) async fn withdraw_grant(
        &self,
        caller: &Caller,
        client_id: &str,
    ) -> Result<Response<Bytes>, ApiError> {
        let listed = self
            .store
            .token_state(&caller.user_id)
            .await?
            .grants
            .contains_key(client_id);
        let end = TokenChange::EndClient {
            client_id: client_id.to_string(),
        };
        self.store
            .change_tokens(&caller.user_id, &end, self.clock.now())
            .await?;
        Ok(ok(
            StatusCode::OK,
            json!({ "client_id": client_id, "revoked": listed }),
        ))
    }
}
