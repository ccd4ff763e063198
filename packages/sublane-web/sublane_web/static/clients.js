// Client versions per provider (CLIENT-2), on Administration → Accounts: the version SubLane
// presents to each upstream (effective = the highest of built-in, seen and pinned), and a pin.
import {announce, api, field, form, h, section} from "./lib.js";

const VERSION = "(0|[1-9][0-9]{0,4})\\.(0|[1-9][0-9]{0,4})\\.(0|[1-9][0-9]{0,4})";

function versionRow(provider, reload) {
  const v = provider.client_version;
  const input = h("input", {name: "version", required: true, pattern: VERSION, maxlength: 17, value: v.pinned || "",
    placeholder: "MAJOR.MINOR.PATCH", autocomplete: "off", spellcheck: "false"});
  const pinForm = form({class: "inline", "aria-label": `Pin the ${provider.label} client version`}, [
    field("Pinned version", input),
    h("button", {type: "submit"}, "Pin"),
  ], async () => {
    await api("PUT", `/api/providers/${provider.name}/client-version`, {version: input.value.trim()});
    announce(`${provider.label}: client version pinned to ${input.value.trim()}.`);
    await reload();
  });
  const unpin = h("button", {type: "button", class: "secondary", hidden: !v.pinned}, "Remove pin");
  unpin.addEventListener("click", async () => {
    unpin.disabled = true;
    try {
      await api("PUT", `/api/providers/${provider.name}/client-version`, {version: null});
      announce(`${provider.label}: pin removed.`);
      await reload();
    } catch (failure) {
      announce(failure.message);
    } finally {
      unpin.disabled = false;
    }
  });
  return h("tr", {class: "client-version", "data-provider": provider.name},
    h("th", {scope: "row"}, provider.label),
    h("td", {class: "effective"}, v.effective),
    h("td", {}, v.built_in),
    h("td", {}, v.seen || "—"),
    h("td", {}, v.pinned || "—"),
    h("td", {}, pinForm, unpin));
}

/** The "Client versions" section: one row per provider with a client identity. */
export function clientVersionsSection() {
  const body = h("tbody", {});
  const reload = async () => {
    const providers = (await api("GET", "/api/providers")).items.filter((p) => p.client_version);
    body.replaceChildren(...providers.map((p) => versionRow(p, reload)));
  };
  reload().catch((failure) => announce(failure.message));
  return section("Client versions",
    h("p", {class: "muted"}, "The client version SubLane presents to each provider: the highest of the one built " +
      "in, the newest seen from a native client in the last 30 days, and a pin. Pin a newer one when an upstream " +
      "answers client_version_too_old."),
    h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Client versions table"},
      h("table", {class: "client-versions"},
        h("thead", {}, h("tr", {}, ["Provider", "Effective", "Built in", "Seen (30 days)", "Pinned", ""]
          .map((label) => h("th", {scope: "col"}, label)))),
        body)));
}
