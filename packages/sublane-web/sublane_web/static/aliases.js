// A group's model aliases (ALIAS-1), edited on the group's page: GET/PUT /api/groups/{id}/aliases.
// Built-in defaults are marked; removing one removes it for this group, "Restore defaults" puts
// them back.
import {announce, api, form, h} from "./lib.js";

function aliasRow(entry, builtin) {
  const alias = h("input", {name: "alias", required: true, maxlength: 128, value: entry.alias,
    "aria-label": "Alias", autocomplete: "off", spellcheck: "false"});
  const model = h("input", {name: "model", required: true, maxlength: 128, value: entry.model,
    "aria-label": `Model of ${entry.alias || "the new alias"}`, autocomplete: "off", spellcheck: "false"});
  const row = h("tr", {class: "alias-row", "data-alias": entry.alias},
    h("td", {}, alias), h("td", {}, model),
    h("td", {class: "muted"}, builtin ? "built-in" : ""),
    h("td", {}, h("button", {type: "button", class: "secondary", "aria-label": `Remove ${entry.alias || "alias"}`,
      onclick: () => row.remove()}, "Remove")));
  alias.addEventListener("change", () => {  // the row's labels follow its alias
    const name = alias.value.trim() || "alias";
    row.dataset.alias = alias.value.trim();
    row.querySelector("button").setAttribute("aria-label", `Remove ${name}`);
  });
  return row;
}

/** The alias editor of group `g`: a form of rows, saved as one PUT. */
export async function aliasEditor(g) {
  const answer = await api("GET", `/api/groups/${g.id}/aliases`);
  const body = h("tbody", {});
  const fill = (entries, defaults) => {
    const builtin = new Map(defaults.map((d) => [d.alias, d.model]));
    body.replaceChildren(...entries.map((e) => aliasRow(e, builtin.get(e.alias) === e.model)));
  };
  fill(answer.aliases, answer.defaults);
  return form({class: "stack", "aria-label": `Aliases of ${g.name}`}, [
    h("p", {class: "muted"}, "A request for an alias is served as its model, and listed with it. " +
      "Built-in aliases cover the names real clients send; remove or change them here."),
    h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": `Aliases table of ${g.name}`},
      h("table", {class: "aliases"},
        h("thead", {}, h("tr", {}, ["Alias", "Model", "", ""].map((label) => h("th", {scope: "col"}, label)))),
        body)),
    h("div", {class: "row"},
      h("button", {type: "button", class: "secondary", onclick: () => {
        const row = aliasRow({alias: "", model: ""}, false);
        body.append(row);
        row.querySelector("input").focus();
      }}, "Add alias"),
      h("button", {type: "button", class: "secondary", onclick: () => {
        const kept = [...body.querySelectorAll("tr")].map(readRow).filter((e) => !answer.defaults.some((d) => d.alias === e.alias));
        fill([...answer.defaults, ...kept], answer.defaults);
      }}, "Restore defaults"),
      h("button", {type: "submit"}, "Save aliases")),
  ], async () => {
    const aliases = [...body.querySelectorAll("tr")].map(readRow);
    const saved = await api("PUT", `/api/groups/${g.id}/aliases`, {aliases});
    fill(saved.aliases, saved.defaults);
    announce(`Aliases of ${g.name} saved.`);
  });
}

function readRow(row) {
  return {alias: row.querySelector("input[name=alias]").value.trim(), model: row.querySelector("input[name=model]").value.trim()};
}
