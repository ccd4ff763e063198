// CONNECT-3: the first-run checklist. Until the workspace has an account, a key and a successful
// model call, admins land here (app.js); each step links to its page and ticks itself from
// GET /api/setup/checklist.
import {api, h, render, section} from "./lib.js";

export const TERMS_NOTE = "Using consumer subscriptions through a shared " +
  "gateway may be against a provider's terms: you, the operator, decide whether to do it. Metered " +
  "(API-key) accounts are the way to stay within them: add API keys billed per token as accounts, " +
  "alone or as overflow behind the subscriptions.";

const HINTS = {
  account: "Sign in to a subscription account, import its credentials, or add an API key.",
  key: "Create a SubLane key for yourself (or issue one for a member).",
  connect: "Point a client at SubLane with the key: the Keys page shows the set-up for each client.",
  first_call: "A model call answered through SubLane.",
};

/** Whether an admin should land on the checklist: the workspace is not set up yet. */
export async function checklistPending() {
  try {
    return !(await api("GET", "/api/setup/checklist")).done;
  } catch {
    return false;
  }
}

export async function checklistView() {
  const answer = await api("GET", "/api/setup/checklist");
  const steps = h("ol", {class: "checklist", "aria-label": "First-run checklist"},
    answer.steps.map((step) => h("li", {class: step.done ? "done" : "todo", "data-step": step.id},
      h("span", {class: "tick", "aria-hidden": "true"}, step.done ? "✓" : "○"),
      h("div", {},
        h("a", {href: step.href}, step.title),
        h("span", {class: "offscreen"}, step.done ? " (done)" : " (to do)"),
        h("br"), h("small", {class: "muted"}, HINTS[step.id] || "")))));
  render("Get started",
    section(answer.done ? "SubLane is set up" : "Set up SubLane",
      h("p", {}, answer.done
        ? "Every step is done: the menu's pages are yours."
        : "Four steps to the first model call. Each ticks itself when done."),
      steps),
    section("Subscriptions and providers' terms", h("p", {class: "terms"}, TERMS_NOTE)));
}
