// My account, for everyone: change password (TEAM-2; the change signs you out everywhere, this
// browser too), two-factor sign-in (AUTH-1) and linking single sign-on (AUTH-2).
import {api, field, form, h, render, section} from "./lib.js";
import {totpPanel} from "./totp.js";

export async function passwordView(me, signedOut) {
  const current = h("input", {type: "password", name: "current_password", autocomplete: "current-password", required: true});
  const next = h("input", {type: "password", name: "new_password", autocomplete: "new-password", required: true,
    minlength: 8, maxlength: 128});
  const again = h("input", {type: "password", name: "repeat", autocomplete: "new-password", required: true,
    minlength: 8, maxlength: 128});
  again.addEventListener("input", () => again.setCustomValidity(again.value === next.value ? "" : "The passwords differ."));
  const twoFactor = h("div", {});
  async function refreshTotp() {
    const fresh = await api("GET", "/api/me");
    twoFactor.replaceChildren(totpPanel(fresh, refreshTotp));
  }
  twoFactor.append(totpPanel(me, refreshTotp));
  render("My account", ssoNotice(),
    section(`Password of ${me.user.username}`, form({class: "stack narrow", "aria-label": "Change password"}, [
      field("Current password", current),
      field("New password", next, "8 to 128 characters"),
      field("New password again", again),
      h("p", {class: "muted"}, "Changing it signs you out on every device, here too. Your API keys keep working."),
      h("button", {type: "submit"}, "Change password"),
    ], async () => {
      await api("POST", "/api/me/password", {current_password: current.value, new_password: next.value});
      signedOut("Password changed. Sign in with the new one.");
    })), section("Two-factor sign-in", twoFactor), ssoSection(me));
  current.focus();
}

const LINK_ERRORS = {
  sso_identity_in_use: "That identity is linked to another SubLane user.",
  sso_link_not_signed_in: "You were signed out (or another user signed in) before the link finished.",
  sso_denied: "The link was refused at your identity provider.",
  sso_expired: "The link took too long: try again.",
};

// AUTH-2: what the provider's way back (/password?sso_linked=1 or ?sso_error=code) says.
function ssoNotice() {
  const query = new URLSearchParams(location.search);
  if (query.get("sso_linked")) return h("p", {class: "notice", role: "status"}, "Single sign-on is linked: you can sign in with it now.");
  const error = query.get("sso_error");
  if (!error) return null;
  return h("p", {class: "notice", role: "status"}, `Single sign-on was not linked (${error}). ${LINK_ERRORS[error] || ""}`);
}

// AUTH-2: link this user to their SSO identity, here while signed in (a first SSO sign-in with an
// existing user's e-mail is refused, so that it never passes the password and two-factor by).
function ssoSection(me) {
  if (!me.sso || !me.sso.configured) return null;
  if (me.sso.linked) return section("Single sign-on", h("p", {class: "muted"}, "Linked: you can sign in with SSO."));
  const start = h("button", {type: "button"}, "Link single sign-on");
  start.addEventListener("click", async () => {
    const answer = await api("POST", "/api/me/oidc/link");
    location.assign(answer.authorization_url);
  });
  return section("Single sign-on",
    h("p", {class: "muted"}, "Sign in with your identity provider from now on, beside your password."), start);
}
