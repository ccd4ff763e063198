// The app shell: who is signed in, the navigation, and which view the path shows.
import {api, ApiError, field, form, h, render} from "./lib.js";
import {accountsView, schedulingView} from "./accounts.js";
import {requestsView} from "./requests.js";
import {keysView} from "./keys.js";
import {groupsView, membersView} from "./people.js";
import {auditView} from "./audit.js";
import {teamUsageView, usageView} from "./usage.js";
import {passwordView} from "./password.js";
import {poolView} from "./pool.js";
import {alertsView} from "./alerts.js";
import {checklistPending, checklistView} from "./checklist.js";
import {changesView} from "./changes.js";

const NAV = [
  {heading: "General", links: [
    {path: "/requests", label: "Requests", view: (me) => requestsView(me, false)},
    {path: "/usage", label: "Usage", view: usageView},
    {path: "/pool", label: "Pool", view: poolView},
    {path: "/keys", label: "Keys", view: keysView},
  ]},
  {heading: "Administration", admin: true, links: [
    {path: "/get-started", label: "Get started", view: checklistView},
    {path: "/accounts", label: "Accounts", view: accountsView},
    {path: "/scheduling", label: "Scheduling settings", view: schedulingView},
    {path: "/admin/requests", label: "All requests", view: (me) => requestsView(me, true)},
    {path: "/admin/usage", label: "Team usage", view: teamUsageView},
    {path: "/members", label: "Members", view: membersView},
    {path: "/groups", label: "Groups", view: groupsView},
    {path: "/admin/alerts", label: "Alerts", view: alertsView},
    {path: "/admin/upstream-changes", label: "Upstream changes", view: changesView},
    {path: "/admin/audit", label: "Audit log", view: auditView},
  ]},
];
// Pages for everyone that the header links to rather than the menu.
const OTHER_PAGES = [
  {path: "/password", label: "My account", view: (me) => passwordView(me, (notice) => {
    history.replaceState(null, "", "/usage");
    signIn(notice);
  })},
];

function navigation(me) {
  const isAdmin = me.user.role === "admin";
  const current = location.pathname;
  return NAV.filter((group) => !group.admin || isAdmin).map((group) =>
    h("div", {class: "nav-group"},
      h("span", {class: "nav-heading"}, group.heading),
      h("ul", {}, group.links.map((link) => h("li", {},
        h("a", {href: link.path, "aria-current": link.path === current ? "page" : null}, link.label))))));
}

const SSO_ERRORS = {
  sso_no_account: "There is no SubLane user for you yet: ask an admin.",
  sso_domain_not_allowed: "Your e-mail's domain may not sign in here.",
  sso_no_verified_email: "Your identity provider did not confirm your e-mail.",
  sso_user_disabled: "Your SubLane user is disabled.",
  sso_expired: "The sign-in took too long, or started in another browser: try again.",
  sso_denied: "The sign-in was refused at your identity provider.",
  account_exists: "A SubLane user with your e-mail exists: sign in with its password, then link single sign-on on My account.",
  sso_public_url_required: "SubLane does not know its public address (SUBLANE_PUBLIC_URL): ask an admin.",
};

function signIn(notice) {
  document.getElementById("nav").replaceChildren();
  document.getElementById("who").replaceChildren();
  const username = h("input", {name: "username", autocomplete: "username", required: true});
  const password = h("input", {name: "password", type: "password", autocomplete: "current-password", required: true});
  // AUTH-1: asked for only when the account has two-factor sign-in on (the server says so).
  const code = h("input", {name: "totp_code", autocomplete: "one-time-code", maxlength: 64, spellcheck: "false"});
  const codeField = field("Authenticator code (or a recovery code)", code);
  codeField.hidden = true;
  const sso = h("div", {class: "sso"});
  api("GET", "/api/auth/methods").then((methods) => {  // AUTH-2: offered when configured
    if (methods && methods.oidc) {
      sso.replaceChildren(h("p", {class: "muted"}, "or"),
        h("a", {href: "/api/auth/oidc/start", class: "button"}, "Sign in with SSO"));
    }
  }).catch(() => null);
  const ssoError = new URLSearchParams(location.search).get("sso_error");
  if (ssoError && typeof notice !== "string") notice = `Single sign-on did not work (${ssoError}). ${SSO_ERRORS[ssoError] || ""}`;
  render("Sign in", typeof notice === "string" ? h("p", {class: "notice", role: "status"}, notice) : null,
    form({class: "panel narrow", "aria-label": "Sign in"}, [
    field("Username", username),
    field("Password", password),
    codeField,
    h("button", {type: "submit"}, "Sign in"),
  ], async () => {
    const body = {username: username.value, password: password.value};
    if (!codeField.hidden) body.totp_code = code.value.trim();
    try {
      await api("POST", "/api/auth/login", body);
    } catch (failure) {
      if (failure instanceof ApiError && failure.code === "totp_required") {
        codeField.hidden = false;
        code.required = true;
        code.focus();
      }
      throw failure;
    }
    await start();
  }), sso);
  username.focus();
}

async function signOut() {
  await api("POST", "/api/auth/logout").catch(() => null);
  history.replaceState(null, "", "/");
  signIn();
}

async function start() {
  let me;
  try {
    me = await api("GET", "/api/me");
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 401) return signIn();
    render("SubLane", h("p", {class: "error", role: "alert"}, failure.message));
    return;
  }
  if (location.pathname === "/") {  // CONNECT-3: admins land on the checklist until the first call
    const first = me.user.role === "admin" && await checklistPending() ? "/get-started" : "/requests";
    history.replaceState(null, "", first);
  }
  document.getElementById("nav").replaceChildren(...navigation(me));
  document.getElementById("who").replaceChildren(
    h("span", {class: "user"}, `${me.user.username}`, h("small", {}, ` (${me.user.role})`)),
    h("a", {href: "/password", class: "who-link", "aria-current": location.pathname === "/password" ? "page" : null},
      "My account"),
    h("button", {type: "button", class: "plain", onclick: signOut}, "Sign out"));
  const links = NAV.filter((group) => !group.admin || me.user.role === "admin").flatMap((group) => group.links)
    .concat(OTHER_PAGES);
  const link = links.find((candidate) => candidate.path === location.pathname);
  if (!link) {
    render("Not available", h("p", {}, "This page is for admins. ", h("a", {href: "/requests"}, "Your requests")));
    return;
  }
  try {
    await link.view(me);
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 401) return signIn();
    render(link.label, h("p", {class: "error", role: "alert"}, failure.message));
  }
}

start();
