// The one way the console puts anything on the page: elements built with textContent, never
// innerHTML, so that every string a session provides (keys, summaries, notice texts) is shown
// as text — a "<script>" in an event summary is five characters on the screen.

export type Child = Node | string | number | null | undefined | false;

export interface Attrs {
  className?: string;
  title?: string;
  data?: Record<string, string>;
  [attribute: string]: string | Record<string, string> | undefined;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined) continue;
    if (name === "className") node.className = value as string;
    else if (name === "data") {
      for (const [key, v] of Object.entries(value as Record<string, string>)) node.dataset[key] = v;
    } else node.setAttribute(name, value as string);
  }
  append(node, ...children);
  return node;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

// Replaces everything inside `parent`.
export function fill(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`the page has no #${id}`);
  return node as T;
}

// A time in ms since the epoch, as UTC: "2025-11-30 00:00:05Z".
export function time(ms: number | undefined | null): string {
  if (ms === undefined || ms === null || ms <= 0) return "—";
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

// A short age relative to `now`: "5 s ago", "3 min ago".
export function age(ms: number | undefined | null, now: number): string {
  if (ms === undefined || ms === null || ms <= 0) return "";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

export function table(headers: string[], rows: Child[][], className = ""): HTMLTableElement {
  return el(
    "table",
    { className },
    el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))),
  );
}
