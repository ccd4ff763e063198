// Two-factor sign-in (AUTH-1) on My account: set it up with the QR code (drawn by the gateway,
// never by a third-party service), confirm with a code, keep the recovery codes; turn it off with
// the password and a code.
import {announce, api, copyButton, field, form, h} from "./lib.js";

function svgNode(markup) {
  const parsed = new DOMParser().parseFromString(markup, "image/svg+xml").documentElement;
  const svg = document.importNode(parsed, true);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "QR code of the authenticator set-up");
  return svg;
}

function codeInput(label) {
  return h("input", {name: "code", required: true, maxlength: 64, autocomplete: "one-time-code",
    spellcheck: "false", "aria-label": label});
}

/** The two-factor panel's content, for `me` (as /api/me answers). */
export function totpPanel(me, refresh) {
  const box = h("div", {class: "totp"});
  if (me.user.totp_enabled) {
    const password = h("input", {type: "password", name: "password", autocomplete: "current-password", required: true});
    const code = codeInput("Code or recovery code");
    box.append(h("p", {class: "totp-state"}, "Two-factor sign-in is on: signing in asks for a code of your authenticator app."),
      form({class: "stack narrow", "aria-label": "Turn two-factor sign-in off"}, [
        field("Password", password), field("Code or recovery code", code),
        h("button", {type: "submit", class: "secondary"}, "Turn off"),
      ], async () => {
        await api("POST", "/api/me/totp/disable", {password: password.value, code: code.value});
        announce("Two-factor sign-in is off.");
        await refresh();
      }));
    return box;
  }
  const start = h("button", {type: "button"}, "Set up two-factor sign-in");
  start.addEventListener("click", async () => {
    const setup = await api("POST", "/api/me/totp/setup");
    const code = codeInput("Code from the app");
    box.replaceChildren(
      h("p", {}, "Scan the code with an authenticator app (or type the key), then enter the code it shows."),
      h("div", {class: "qr"}, svgNode(setup.qr_svg)),
      h("p", {}, "Key: ", h("span", {class: "mono totp-secret"}, setup.secret), " ", copyButton(setup.secret, "key")),
      form({class: "stack narrow", "aria-label": "Confirm two-factor sign-in"}, [
        field("Code from the app", code),
        h("button", {type: "submit"}, "Turn on"),
      ], async () => {
        const {recovery_codes: codes} = await api("POST", "/api/me/totp/enable", {code: code.value});
        box.replaceChildren(
          h("p", {class: "totp-state"}, "Two-factor sign-in is on."),
          h("p", {}, "Recovery codes: each signs you in once, in place of a code. Keep them somewhere safe; they are shown only now."),
          h("ul", {class: "plain-list mono recovery-codes"}, codes.map((c) => h("li", {}, c))),
          copyButton(codes.join("\n"), "recovery codes"),
          h("button", {type: "button", class: "secondary", onclick: refresh}, "Done"));
        announce("Two-factor sign-in is on.");
      }));
    code.focus();
  });
  box.append(h("p", {class: "totp-state"}, "Two-factor sign-in is off: your password alone signs you in."), start);
  return box;
}
