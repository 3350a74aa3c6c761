// One session in detail: who watches it and whom it watches (cursors, lag, the pending
// notices' exact text, last wakes), its event timeline (changesSince paging, a history gap
// shown as one), and the time slider over its sequences (GET /v1/sessions/{key}/status?asOf=).
import { get, sessionPath } from "./api.js";
import type { ChangeEvent, CursorRow, Links, SessionState, Wake } from "./api.js";
import { byId, el, fill, table, time } from "./dom.js";
import type { Child } from "./dom.js";
import { renderAsOf } from "./asof.js";

const PAGE = 50;

// A wake's time, its reason (session-state:<target>) as the tooltip.
function wakeCell(w: Wake | null | undefined): Node | string {
  return w ? el("span", { className: "wake", title: w.reason }, time(w.at)) : "—";
}

function lagText(c: CursorRow): string {
  return c.lagTruncated ? `${c.lag}+` : String(c.lag);
}

function noticeCell(text: string | null): Node | string {
  return text === null ? "—" : el("pre", { className: "notice-text" }, text);
}

// A table of cursors (the watchers of this session, or the sessions it watches) into #id, a
// row per cursor; the sentence `empty` when there is none.
function fillCursors(id: string, rows: CursorRow[], empty: string, headers: string[], cells: (c: CursorRow) => Child[]): void {
  fill(byId(id), rows.length === 0 ? el("p", { className: "muted" }, empty) : table(headers, rows.map(cells), "cursors"));
}

export class Detail {
  private key = "";
  private agentId = "";
  private events: ChangeEvent[] = [];
  private truncated = false; // more pages after the loaded events
  private gap: { earliest: number } | null = null;
  private sliderAtEnd = true;
  private asOfTimer: number | undefined;
  private asOfSeq = 0; // the slider position asked for (-1: now)
  private earliestAsOf = 0; // from the last status answer

  constructor(private readonly onError: (e: unknown) => void) {
    byId("more").addEventListener("click", () => void this.loadPage().catch(onError));
    byId<HTMLInputElement>("slider").addEventListener("input", () => this.slid());
  }

  selected(): string {
    return this.key;
  }

  async show(key: string, agentId: string): Promise<void> {
    this.key = key;
    this.agentId = agentId;
    this.events = [];
    this.truncated = false;
    this.gap = null;
    this.sliderAtEnd = true;
    fill(byId("detail-title"), key);
    fill(byId("timeline"));
    fill(byId("asof"));
    byId("detail-body").hidden = false;
    await this.refresh();
  }

  // Re-reads the links and appends the events recorded since (the pulse moved).
  async refresh(): Promise<void> {
    if (this.key === "") return;
    const key = this.key;
    const links = await get<Links>(sessionPath(key, this.agentId, "/links", "", "/v1/console/sessions"));
    if (key !== this.key) return; // another session was selected meanwhile
    this.renderLinks(links);
    if (!this.truncated) await this.loadPage();
  }

  private renderLinks(links: Links): void {
    fill(
      byId("detail-meta"),
      el("span", { className: "badge version" }, `state version ${links.stateVersion}`),
      " agent ",
      el("strong", {}, links.agentId),
      " · last wake ",
      wakeCell(links.lastWake),
    );
    fillCursors("watchers", links.watchers, "No watcher follows this session.",
      ["watcher", "L", "N", "M", "lag", "pending notice", "last wake"],
      (c) => [c.watcher ?? "", c.lastSeen, c.notified, c.material, lagText(c), noticeCell(c.notice), wakeCell(c.lastWake)]);
    fillCursors("targets", links.targets, "This session watches no other.",
      ["target", "L", "N", "M", "target version", "lag", "pending notice"],
      (c) => [c.target ?? "", c.lastSeen, c.notified, c.material, c.stateVersion ?? "", lagText(c), noticeCell(c.notice)]);
    fill(
      byId("notices"),
      links.notices.length === 0
        ? el("p", { className: "muted" }, "No pending notice.")
        : el("ul", { className: "notices" }, ...links.notices.map((n) => el("li", { title: n.contextKey }, el("pre", { className: "notice-text" }, n.text)))),
    );
  }

  // The next page of changesSince after the last loaded event.
  async loadPage(): Promise<void> {
    const key = this.key;
    const after = this.events.length > 0 ? this.events[this.events.length - 1].sequence : 0;
    const state = await get<SessionState>(
      sessionPath(key, this.agentId, "/state", `changesSince=${after}&limit=${PAGE}`),
    );
    if (key !== this.key || !state.stateChanges) return;
    const changes = state.stateChanges;
    if (changes.historyGap && this.events.length === 0) this.gap = { earliest: changes.earliestAvailableSequence };
    const known = new Set(this.events.map((e) => e.sequence));
    for (const e of changes.events) if (!known.has(e.sequence)) this.events.push(e);
    this.truncated = changes.truncated;
    this.renderTimeline();
  }

  private renderTimeline(): void {
    const rows = this.events.map((e) =>
      el(
        "tr",
        { data: { sequence: String(e.sequence) } },
        el("td", {}, `#${e.sequence}`),
        el("td", {}, time(e.occurredAt)),
        el("td", {}, e.kind),
        el("td", {}, e.actorType + (e.actorId ? ` ${e.actorId}` : "")),
        el("td", { className: "summary" }, e.summary),
      ),
    );
    fill(
      byId("timeline"),
      this.gap
        ? el(
            "p",
            { className: "history-gap" },
            `History gap: events before #${this.gap.earliest} were pruned; the timeline starts there.`,
          )
        : null,
      this.events.length === 0
        ? el("p", { className: "muted" }, "No retained event.")
        : el(
            "table",
            { className: "timeline" },
            el("thead", {}, el("tr", {}, ...["seq", "occurred", "kind", "actor", "summary"].map((h) => el("th", {}, h)))),
            el("tbody", {}, ...rows),
          ),
    );
    byId("more").hidden = !this.truncated;
    this.updateSlider();
  }

  // The slider's positions are the loaded events' sequences; at the end it follows new ones.
  private updateSlider(): void {
    const slider = byId<HTMLInputElement>("slider");
    slider.min = "0";
    slider.max = String(Math.max(0, this.events.length - 1));
    slider.disabled = this.events.length === 0;
    if (this.sliderAtEnd) slider.value = slider.max;
    this.showSliderLabel();
    if (this.sliderAtEnd && this.events.length > 0) this.queueAsOf();
  }

  private showSliderLabel(): void {
    const slider = byId<HTMLInputElement>("slider");
    const e = this.events[Number(slider.value)];
    fill(byId("slider-label"), e ? `as of #${e.sequence} (${e.kind}, ${time(e.occurredAt)})` : "—");
  }

  private slid(): void {
    const slider = byId<HTMLInputElement>("slider");
    this.sliderAtEnd = slider.value === slider.max;
    this.showSliderLabel();
    this.queueAsOf();
  }

  // One asOf read per pause of the slider.
  private queueAsOf(): void {
    if (this.asOfTimer !== undefined) clearTimeout(this.asOfTimer);
    this.asOfTimer = window.setTimeout(() => void this.loadAsOf().catch(this.onError), 150);
  }

  // The end of the slider reads the status now (which also says how far back the retained
  // log reaches: earliestAsOf); an earlier event reads it as of that event's sequence.
  private async loadAsOf(): Promise<void> {
    const slider = byId<HTMLInputElement>("slider");
    const e = this.events[Number(slider.value)];
    if (!e) return;
    const key = this.key;
    const atEnd = slider.value === slider.max;
    const seq = e.sequence;
    this.asOfSeq = atEnd ? -1 : seq;
    if (!atEnd && seq < this.earliestAsOf) {
      fill(
        byId("asof"),
        el("p", { className: "history-gap" }, `As of #${seq}: before #${this.earliestAsOf}, the earliest sequence the retained log can rebuild (its last checkpoint).`),
      );
      return;
    }
    const query = atEnd ? "changesSince=0" : `asOf=${seq}&changesSince=0`;
    const answer = await get<Record<string, unknown>>(sessionPath(key, this.agentId, "/status", query));
    if (key !== this.key || this.asOfSeq !== (atEnd ? -1 : seq)) return;
    if (typeof answer.earliestAsOf === "number") this.earliestAsOf = answer.earliestAsOf;
    renderAsOf(byId("asof"), atEnd ? `Now (#${String(answer.asOf)})` : `As of #${seq}`, answer);
  }
}
