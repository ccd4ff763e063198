// My account, for everyone: change password (TEAM-2; the change signs you out everywhere, this
// browser too) and two-factor sign-in (AUTH-1).
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
  render("My account",
    section(`Password of ${me.user.username}`, form({class: "stack narrow", "aria-label": "Change password"}, [
      field("Current password", current),
      field("New password", next, "8 to 128 characters"),
      field("New password again", again),
      h("p", {class: "muted"}, "Changing it signs you out on every device, here too. Your API keys keep working."),
      h("button", {type: "submit"}, "Change password"),
    ], async () => {
      await api("POST", "/api/me/password", {current_password: current.value, new_password: next.value});
      signedOut("Password changed. Sign in with the new one.");
    })), section("Two-factor sign-in", twoFactor));
  current.focus();
}
