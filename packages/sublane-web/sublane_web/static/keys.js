// Keys (WEB-4): your keys for everyone — create (secret shown once), list, revoke — and all keys for admins;
// "Connect a client" (CONNECT-1) at creation and from the list.
import {announce, api, copyButton, DASH, field, form, formatTime, h, option, render, section} from "./lib.js";
import {connectPanel} from "./connect.js";

function keysTable(items, {withOwner, revokePath, connect}, reload) {
  if (!items.length) return h("p", {class: "empty"}, "No keys yet.");
  return h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": withOwner ? "All keys" : "Your keys"},
    h("table", {},
      h("thead", {}, h("tr", {},
        ["Name", withOwner && "Member", "Group", "Key", "State", "Client networks", "Created", "Expires", ""]
          .filter((x) => x !== false)
          .map((label) => h("th", {scope: "col"}, label)))),
      h("tbody", {}, items.map((key) => h("tr", {"data-key-id": key.id},
        h("td", {}, key.name),
        withOwner && h("td", {}, key.username ?? key.user_id),
        h("td", {}, key.group_name ?? key.group_id),
        h("td", {class: "mono"}, key.hint || DASH),
        h("td", {}, h("span", {class: `badge key-${key.state}`}, key.state)),
        h("td", {class: "mono networks"}, (key.allowed_ips || []).length ? key.allowed_ips.join(", ") : "any"),
        h("td", {}, formatTime(key.created_at)),
        h("td", {}, key.expires_at ? formatTime(key.expires_at) : "never"),
        h("td", {}, key.state === "revoked" ? "" : [connect ? [h("button", {type: "button", class: "secondary",
          "aria-label": `Connect a client to ${key.name}`, onclick: () => connect(key)}, "Connect"), " "] : null,
          h("button", {type: "button", class: "secondary",
          "aria-label": `Client networks of ${key.name}`,
          onclick: async () => {  // AUTH-3: where the key may be used from
            const answer = window.prompt(
              `Client networks of ${key.name}: addresses or CIDR networks, comma-separated; empty for any.`,
              (key.allowed_ips || []).join(", "));
            if (answer === null) return;
            try {
              await api("PATCH", revokePath(key), {allowed_ips: networks(answer)});
            } catch (failure) {
              announce(`Not changed: ${failure.message}`);
              return;
            }
            announce(`Client networks of ${key.name} saved.`);
            await reload();
          }}, "Networks"), " ", h("button", {type: "button", class: "danger",
          "aria-label": `Revoke ${key.name}`,
          onclick: async () => {
            if (!window.confirm(`Revoke the key ${key.name}? Clients using it stop working at once.`)) return;
            await api("DELETE", revokePath(key));
            announce(`Key ${key.name} revoked.`);
            await reload();
          }}, "Revoke")]))))));
}

function networks(text) {
  return text.split(/[\s,]+/).map((entry) => entry.trim()).filter(Boolean);
}

export async function keysView(me) {
  const isAdmin = me.user.role === "admin";
  const mine = h("div", {});
  const all = h("div", {});
  const secretBox = h("div", {class: "secret", hidden: true, role: "region", "aria-label": "New key secret"});
  const connectBox = h("div", {});

  async function connect(key) {  // CONNECT-1 from the list: a placeholder for the secret
    connectBox.replaceChildren(await connectPanel(key, null));
    connectBox.scrollIntoView({block: "nearest"});
  }

  async function reload() {
    const items = (await api("GET", "/api/me/keys")).items;
    mine.replaceChildren(
      keysTable(items, {withOwner: false, revokePath: (k) => `/api/me/keys/${k.id}`, connect}, reload));
    if (isAdmin) {
      const every = (await api("GET", "/api/keys")).items;
      all.replaceChildren(keysTable(every, {withOwner: true, revokePath: (k) => `/api/keys/${k.id}`}, reload));
    }
  }

  function showSecret(key, owner) {
    secretBox.replaceChildren(
      h("p", {}, h("strong", {}, `The secret of ${key.name}${owner ? ` (for ${owner})` : ""}. `),
        "It is shown only now: copy it somewhere safe."),
      h("p", {class: "secret-row"}, h("code", {class: "secret-value"}, key.secret), copyButton(key.secret, "key secret")));
    secretBox.hidden = false;
    // CONNECT-1 at creation: the set-up holds the secret
    connectPanel(key, key.secret).then((panel) => secretBox.append(panel))
      .catch((failure) => secretBox.append(h("p", {class: "error", role: "alert"}, failure.message)));
  }

  const name = h("input", {name: "name", required: true, maxlength: 64, autocomplete: "off"});
  const group = h("select", {name: "group_id", required: true}, me.groups.map((g) => option(g.id, g.name)));
  const expires = h("input", {type: "date", name: "expires"});
  const allowed = h("input", {name: "allowed_ips", autocomplete: "off", spellcheck: "false",
    placeholder: "10.0.0.0/8, 2001:db8::/32"});
  const create = form({class: "inline", "aria-label": "Create a key"}, [
    field("Key name", name),
    field("Group", group),
    field("Expires (optional)", expires),
    field("Client networks (optional)", allowed),
    h("button", {type: "submit"}, "Create key"),
  ], async (el) => {
    const expiresAt = expires.value ? Math.floor(new Date(`${expires.value}T23:59:59`).getTime() / 1000) : null;
    const key = await api("POST", "/api/me/keys",
      {name: name.value, group_id: Number(group.value), expires_at: expiresAt, allowed_ips: networks(allowed.value)});
    el.reset();
    showSecret(key, null);
    announce(`Key ${key.name} created.`);
    await reload();
  });

  const parts = [
    section("Create a key", me.groups.length ? create : h("p", {}, "You are in no group yet; ask an admin."), secretBox),
    section("Your keys", mine, connectBox),
  ];
  if (isAdmin) {
    const users = (await api("GET", "/api/users")).items;
    const groups = (await api("GET", "/api/groups")).items;
    const user = h("select", {name: "user_id", required: true}, users.map((u) => option(u.id, u.username)));
    const issueGroup = h("select", {name: "group_id", required: true}, groups.map((g) => option(g.id, g.name)));
    const issueName = h("input", {name: "name", required: true, maxlength: 64, autocomplete: "off"});
    const issue = form({class: "inline", "aria-label": "Issue a key for a member"}, [
      field("Member", user), field("Group", issueGroup), field("Key name", issueName),
      h("button", {type: "submit"}, "Issue key"),
    ], async (el) => {
      const owner = user.selectedOptions[0].textContent;
      const key = await api("POST", `/api/users/${user.value}/keys`,
        {name: issueName.value, group_id: Number(issueGroup.value)});
      el.reset();
      showSecret(key, owner);
      await reload();
    });
    parts.push(section("Issue a key for a member", issue), section("All keys", all));
  }
  render("Keys", ...parts);
  await reload();
}
