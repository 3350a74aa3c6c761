#!/usr/bin/env bash
# The TypeScript client as a user installs it: from a git checkout of this repository (the
# tracked files of clients/typescript copied to a scratch directory: no dist/, no
# node_modules/), `npm ci` there (whose `prepare` builds dist/esm and dist/cjs), then
# `npm install <path>` into two scratch projects — the default symlink and --install-links
# (a packed copy: only the `files` of package.json) — each using the client from an .mjs
# (import) and a .cjs (require) file against a real `statewatch serve`: one write and reads.
# The types of both entry points are checked with the package's own tsc (.mts and .cts).
# npm reads its cache first (--prefer-offline); only what is not cached is fetched.
#
# Usage: scripts/test-client-install.sh PATH/TO/statewatch
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${1:?usage: scripts/test-client-install.sh PATH/TO/statewatch}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "test-client-install: $BIN is not built" >&2; exit 1; }

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/statewatch-client-install.XXXXXX")"
DAEMON_PID=""
cleanup() {
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
fail() { echo "test-client-install: $*" >&2; exit 1; }
NPM_FLAGS=(--prefer-offline --no-audit --no-fund --loglevel=error)

# --- the checkout: tracked and new (not ignored) files only ------------------------------
mkdir -p "$SCRATCH/checkout"
(cd "$ROOT" && git ls-files -co --exclude-standard -- clients/typescript) \
  | (cd "$ROOT" && tar -cf - -T -) | tar -xf - -C "$SCRATCH/checkout"
PKG="$SCRATCH/checkout/clients/typescript"
[ ! -e "$PKG/dist" ] && [ ! -e "$PKG/node_modules" ] || fail "the checkout copy has build output"
(cd "$PKG" && npm ci "${NPM_FLAGS[@]}" >/dev/null)
for f in dist/esm/index.js dist/esm/index.d.ts dist/cjs/index.js dist/cjs/index.d.ts \
         dist/cjs/package.json; do
  [ -f "$PKG/$f" ] || fail "prepare did not build $f"
done

# --- a daemon on a free port --------------------------------------------------------------
"$BIN" --data "$SCRATCH/data" --durability buffered serve --listen 127.0.0.1:0 \
  --port-file "$SCRATCH/port" --log-level warn >"$SCRATCH/daemon.out" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 1 200); do  # up to 20 s
  [ -s "$SCRATCH/port" ] && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$SCRATCH/daemon.out" >&2; fail "the daemon exited"; }
  sleep 0.1
done
[ -s "$SCRATCH/port" ] || fail "the daemon wrote no port file within 20 s"
STATEWATCH_URL="http://127.0.0.1:$(cat "$SCRATCH/port")"
export STATEWATCH_URL

# --- the consumer files -------------------------------------------------------------------
write_app() {
  local app="$1" tag="$2"
  mkdir -p "$app"
  echo "{\"name\": \"scratch-$tag\", \"version\": \"1.0.0\", \"private\": true}" >"$app/package.json"
  cat >"$app/use.mjs" <<EOF
import { StatewatchClient, StatewatchError } from "statewatch-client";
const sw = new StatewatchClient({ url: process.env.STATEWATCH_URL });
const key = "agent:main:install-$tag-esm";
await sw.upsertSession(key, { kind: "main", channel: "telegram" });
const written = await sw.recordEvents({ sessionKey: key, kind: "human_direct_message", actorType: "human" });
const state = await sw.sessionState(key);
const health = await sw.health();
if (health.status !== "ok") throw new Error("health: " + JSON.stringify(health));
if (written.events.length !== 1 || !(state.stateVersion >= 1)) throw new Error("state: " + JSON.stringify(state));
if (typeof StatewatchError !== "function") throw new Error("no StatewatchError");
console.log("esm ok " + key + " v" + state.stateVersion);
EOF
  cat >"$app/use.cjs" <<EOF
const { StatewatchClient, StatewatchError } = require("statewatch-client");
(async () => {
  const sw = new StatewatchClient({ url: process.env.STATEWATCH_URL });
  const key = "agent:main:install-$tag-cjs";
  await sw.upsertSession(key, { kind: "main", channel: "telegram" });
  const written = await sw.recordEvents({ sessionKey: key, kind: "human_direct_message", actorType: "human" });
  const state = await sw.sessionState(key);
  if (written.events.length !== 1 || !(state.stateVersion >= 1)) throw new Error("state: " + JSON.stringify(state));
  // An error answer arrives as the package's error class.
  const refused = await sw.recordEvents({ sessionKey: "", kind: "nonsense", actorType: "human" })
    .then(() => null, (e) => e);
  if (!(refused instanceof StatewatchError) || refused.status !== 400) throw new Error("error: " + refused);
  console.log("cjs ok " + key + " v" + state.stateVersion);
})().catch((e) => { console.error(e); process.exit(1); });
EOF
}

run_app() {
  local app="$1"
  (cd "$app" && node use.mjs && node use.cjs) || fail "the client failed in $app"
}

# The default `npm install <path>`: a symlink to the checkout.
write_app "$SCRATCH/app-link" link
(cd "$SCRATCH/app-link" && npm install "${NPM_FLAGS[@]}" "$PKG" >/dev/null)
[ -L "$SCRATCH/app-link/node_modules/statewatch-client" ] || fail "npm install <path> made no link"
run_app "$SCRATCH/app-link"

# --install-links: a packed copy, so a file missing from package.json's `files` shows.
write_app "$SCRATCH/app-copy" copy
(cd "$SCRATCH/app-copy" && npm install --install-links "${NPM_FLAGS[@]}" "$PKG" >/dev/null)
INSTALLED="$SCRATCH/app-copy/node_modules/statewatch-client"
[ -d "$INSTALLED" ] && [ ! -L "$INSTALLED" ] || fail "--install-links made no copy"
[ ! -e "$INSTALLED/src" ] && [ ! -e "$INSTALLED/dist/test" ] || fail "the packed copy holds sources or tests"
run_app "$SCRATCH/app-copy"

# The declarations of both conditions: import resolves dist/esm, require dist/cjs.
cat >"$SCRATCH/app-copy/types.mts" <<'EOF'
import { StatewatchClient, type SessionState } from "statewatch-client";
export const read = (c: StatewatchClient): Promise<SessionState> => c.sessionState("agent:main:main");
EOF
cat >"$SCRATCH/app-copy/types.cts" <<'EOF'
import sw = require("statewatch-client");
export const read = (c: sw.StatewatchClient): Promise<sw.SessionState> => c.sessionState("agent:main:main");
EOF
cat >"$SCRATCH/app-copy/tsconfig.json" <<'EOF'
{ "compilerOptions": { "module": "NodeNext", "moduleResolution": "NodeNext", "target": "ES2022",
    "strict": true, "noEmit": true, "skipLibCheck": true, "types": [] },
  "files": ["types.mts", "types.cts"] }
EOF
explain="$(cd "$SCRATCH/app-copy" && "$PKG/node_modules/.bin/tsc" -p . --explainFiles)" \
  || { echo "$explain" >&2; fail "the declarations do not type-check"; }
for d in dist/esm/index.d.ts dist/cjs/index.d.ts; do
  grep -q "statewatch-client/$d" <<<"$explain" || fail "tsc did not resolve $d"
done
echo "test-client-install: ok (npm install <path>, link and copy; import and require; types of both)"
