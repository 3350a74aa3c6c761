// The time slider's answer: GET /v1/sessions/{key}/status?asOf=SEQ — the session's state
// version, changes, cursors both ways and pending notices as they were right after SEQ
// (docs/http-api.md, "Status as of a past sequence").
import { el, fill, table } from "./dom.js";

type Json = Record<string, unknown>;

function num(o: Json, name: string): number | undefined {
  const v = o[name];
  return typeof v === "number" ? v : undefined;
}

function list(o: Json, ...names: string[]): Json[] {
  for (const name of names) {
    const v = o[name];
    if (Array.isArray(v)) return v.filter((x): x is Json => typeof x === "object" && x !== null);
  }
  return [];
}

function text(v: unknown): string {
  if (v === undefined || v === null) return "—";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function cursorRows(rows: Json[], who: string): Node {
  return table(
    [who === "targetSessionKey" ? "target" : "watcher", "L", "N", "M", "pending"],
    rows.map((r) => [text(r[who]), text(r.lastSeen), text(r.notified), text(r.material), r.pending === true ? "yes" : "no"]),
    "cursors",
  );
}

// `label` says which state it is: "As of #120" or "Now (#187)".
export function renderAsOf(container: HTMLElement, label: string, answer: Json): void {
  const version = num(answer, "stateVersion");
  const changes = answer.stateChanges as Json | undefined;
  const events = changes ? list(changes, "events") : [];
  const pending = list(answer, "pendingNotices");
  const watching = list(answer, "watching");
  const watchers = list(answer, "watchers");
  const deleted = num(answer, "deletedAt");
  fill(
    container,
    el(
      "p",
      { className: "asof-head" },
      el("strong", {}, `${label}: `),
      el("span", { className: "asof-version" }, `state version ${version ?? "—"}`),
      `, ${events.length}${changes && changes.truncated ? "+" : ""} events, ${pending.length} pending notices, watermark ${text(answer.watermark)}`,
      deleted ? `; deleted at #${deleted}` : "",
    ),
    changes && changes.historyGap === true
      ? el("p", { className: "history-gap" }, `History gap: events before #${text(changes.earliestAvailableSequence)} were pruned.`)
      : null,
    pending.length > 0
      ? el("ul", { className: "notices" }, ...pending.map((n) => el("li", {}, el("pre", { className: "notice-text" }, text(n.text)))))
      : null,
    watching.length > 0 ? el("div", {}, el("h4", {}, "Watching"), cursorRows(watching, "targetSessionKey")) : null,
    watchers.length > 0 ? el("div", {}, el("h4", {}, "Watchers"), cursorRows(watchers, "watcherSessionKey")) : null,
  );
}
