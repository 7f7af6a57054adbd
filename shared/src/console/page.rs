//! The console's pages by name, which the route table names (`http/routes.rs`). The one
//! part of `console/` every build has: a function built without the `console` feature
//! compiles this file alone as `crate::console` (see `lib.rs`), and never serves a page.

/// What answers a console route: one arm each in `ConsoleApi::serve` (`console/mod.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Page {
    /// `GET /`: the data page when signed in, else the sign-in page.
    Home,
    /// The stylesheet and the one script.
    Asset,
    SignUpForm,
    SignUp,
    SignInForm,
    SignIn,
    SignOut,
    /// Issue 27: "check your e-mail", or a confirmation link's landing page.
    ConfirmForm,
    /// Use the confirmation link.
    Confirm,
    /// Mail a new confirmation link (signed in).
    ConfirmResend,
    /// "Forgot password": the address form.
    ForgotForm,
    Forgot,
    /// A reset link's landing page: the new password form.
    ResetForm,
    Reset,
    PasswordForm,
    Password,
    /// The catalogue: every indicator with its count, dates and unit.
    Data,
    /// One indicator: its chart and latest readings.
    Indicator,
    /// The genome summary and the rsid look-up.
    Genome,
    Upload,
    /// JSON for the page's script: create an upload (CSRF header).
    UploadCreate,
    /// JSON for the page's script: one upload's status.
    UploadStatus,
    Connect,
    /// Mint (or show) the personal MCP URL.
    UrlCreate,
    UrlRevoke,
    Servers,
    ServerAdd,
    ServerEditForm,
    ServerEdit,
    ServerToggle,
    ServerProbe,
    ServerDelete,
    Access,
    GrantRevoke,
    /// Share with an address: an invitation (issue 27).
    ShareOffer,
    /// Accept an invitation to the signed-in person's confirmed address.
    InvitationAccept,
    ShareRevoke,
    TemporaryUrlRevoke,
    SignOutAll,
    Account,
    Export,
    DeleteData,
    DeleteAccount,
}
