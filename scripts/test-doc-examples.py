#!/usr/bin/env python3
"""The shell examples of README.md and docs/*.md, run as a reader pastes them (make test).

A block a reader is meant to paste is marked by an HTML comment on the line before its fence,
which Markdown does not render:

    <!-- example -->
    ```sh
    curl -s $S/healthz
    ```

Each file's marked blocks run in order, in one bash (so a variable set in one block holds in
the next), in a scratch directory, against a fresh `statewatch serve` of the binary given (on
a free loopback port: `127.0.0.1:7411` and `localhost:7411` in a block are rewritten to it;
`statewatch` is that binary). The shell runs with `set -euo pipefail`, and `curl` fails on
an HTTP error status (`--fail-with-body`), so an example answered 4xx or 5xx fails the run,
showing the block, its output and the answer.

`<!-- example: background, expect "TEXT" -->` starts the block in the background first (a
follower a reader starts in a second terminal) and waits for its first output line (the
CLI's `following ...`), runs the file's other blocks, then requires TEXT in the block's
output within 10 s before stopping it.

Every other ```sh block must say why it is not run, on the line before its fence:
`<!-- not run: needs nats-server and etcd; make test runs the cluster smoke -->`. A shell
block with neither mark fails the run, so a new example cannot be left out by accident.

The blocks may use `$URL` (the daemon's address) and `$TOKEN` (a bearer token: the scratch
daemon requires none, and accepts any), which the docs ask a reader to set.

A file that starts its own daemon in an example (`statewatch --data pm serve --listen
127.0.0.1:7411 &`) says `<!-- examples: own daemon -->` once: no daemon is started for it,
its 127.0.0.1:7411 is rewritten to a free port, and whatever its blocks leave running is
stopped at the end.

Usage: scripts/test-doc-examples.py PATH/TO/statewatch [FILE.md ...]
"""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# TEXT runs to the comment's last quote: it may hold quotes itself.
MARK = re.compile(r'^<!-- example(?::\s*(background)(?:,\s*expect\s+"(.*)")?)?\s*-->$')
NOT_RUN = re.compile(r'^<!-- not run: \S.*-->$')
OWN_DAEMON = "<!-- examples: own daemon -->"
SHELL_FENCES = ("```sh", "```bash", "```shell")
WAIT_S = 10
BLOCK_TIMEOUT_S = 60


class Block:
    def __init__(self, path, line, text, background, expect):
        self.path, self.line, self.text = path, line, text
        self.background, self.expect = background, expect

    def where(self):
        return "%s:%d" % (os.path.relpath(self.path, ROOT), self.line)


def marked_blocks(path):
    """The marked ```sh blocks of a Markdown file, in order."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks = []
    inside = False
    for i, line in enumerate(lines):
        if line.strip().startswith("```"):
            if not inside and line.strip() in SHELL_FENCES:
                before = lines[i - 1].strip() if i > 0 else ""
                if not MARK.match(before) and not NOT_RUN.match(before):
                    sys.exit("%s:%d: a shell block needs <!-- example --> or <!-- not run: "
                             "WHY --> on the line before its fence" % (path, i + 1))
            inside = not inside
        m = MARK.match(line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or lines[i + 1].strip() not in SHELL_FENCES:
            sys.exit("%s:%d: an example mark must stand on the line before a ```sh fence"
                     % (path, i + 1))
        end = i + 2
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            sys.exit("%s:%d: the example's fence is never closed" % (path, i + 2))
        if m.group(1) and not m.group(2):
            sys.exit('%s:%d: a background example needs expect "TEXT"' % (path, i + 1))
        blocks.append(Block(path, i + 3, "\n".join(lines[i + 2:end]), bool(m.group(1)),
                            m.group(2)))
    return blocks


def start_daemon(binary, scratch):
    port_file = os.path.join(scratch, "daemon.port")
    log = open(os.path.join(scratch, "daemon.log"), "w")
    daemon = subprocess.Popen([binary, "--data", os.path.join(scratch, "daemon-data"), "serve",
                               "--listen", "127.0.0.1:0", "--port-file", port_file,
                               "--log-level", "warn"],
                              stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if os.path.exists(port_file) and open(port_file).read().strip():
            return daemon, int(open(port_file).read().strip())
        if daemon.poll() is not None:
            break
        time.sleep(0.05)
    daemon.kill()
    sys.exit("test-doc-examples: the daemon did not start:\n" +
             open(os.path.join(scratch, "daemon.log")).read())


PRELUDE = """set -euo pipefail
curl() { command curl --fail-with-body --max-time 30 "$@"; }
URL=http://127.0.0.1:7411
TOKEN=doc-examples-token
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def localize(text, port):
    return re.sub(r"(127\.0\.0\.1|localhost):7411", r"\g<1>:%d" % port, text)


def run_file(binary, path):
    blocks = marked_blocks(path)
    if not blocks:
        return 0
    scratch = tempfile.mkdtemp(prefix="statewatch-doc-examples-")
    bindir = os.path.join(scratch, "bin")
    os.mkdir(bindir)
    os.symlink(binary, os.path.join(bindir, "statewatch"))
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    own_daemon = OWN_DAEMON in open(path, encoding="utf-8").read()
    daemon, port = (None, free_port()) if own_daemon else start_daemon(binary, scratch)
    followers = []
    try:
        for b in [b for b in blocks if b.background]:
            out = open(os.path.join(scratch, "background-%d.out" % b.line), "w+")
            p = subprocess.Popen(["bash", "-c", localize(PRELUDE + b.text, port)], cwd=scratch,
                                 env=env, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            followers.append((b, p, out))
        # A follower connects before the writes it is meant to see: its first line (the CLI's
        # "following ..." on stderr) says it has.
        for b, p, out in followers:
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline and p.poll() is None:
                out.flush()
                if os.path.getsize(out.name) > 0:
                    break
                time.sleep(0.05)
        script = localize(PRELUDE, port)
        for b in [b for b in blocks if not b.background]:
            script += "echo %s\n%s\n" % (shlex.quote("### " + b.where()), localize(b.text, port))
        # Output to files, not pipes: a daemon a block leaves running keeps a pipe open.
        with open(os.path.join(scratch, "examples.out"), "w+") as out, \
                open(os.path.join(scratch, "examples.err"), "w+") as err:
            main = subprocess.Popen(["bash", "-c", script], cwd=scratch, env=env, stdout=out,
                                    stderr=err, start_new_session=True)
            try:
                main.wait(timeout=BLOCK_TIMEOUT_S * len(blocks))
            finally:
                try:  # what the blocks left running (a daemon of their own) stops with them
                    os.killpg(main.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            out.seek(0)
            err.seek(0)
            r = subprocess.CompletedProcess(main.args, main.returncode, out.read(), err.read())
        if r.returncode != 0:
            print("test-doc-examples: FAILED in %s (exit %d)\n--- output:\n%s%s"
                  % (os.path.relpath(path, ROOT), r.returncode, r.stdout, r.stderr))
            return 1
        failed = 0
        for b, p, out in followers:
            deadline = time.monotonic() + WAIT_S
            seen = ""
            while time.monotonic() < deadline:
                out.flush()
                out.seek(0)
                seen = out.read()
                if b.expect in seen or p.poll() is not None:
                    break
                time.sleep(0.1)
            if b.expect not in seen:
                print("test-doc-examples: FAILED: %s (background) never printed %r\n"
                      "--- output:\n%s" % (b.where(), b.expect, seen))
                failed = 1
        count = len(blocks)
        if not failed:
            print("test-doc-examples: %s: %d example%s ran" % (
                os.path.relpath(path, ROOT), count, "" if count == 1 else "s"))
        return failed
    finally:
        for _, p, out in followers:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
            p.wait()
            out.close()
        if daemon:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                daemon.kill()
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: scripts/test-doc-examples.py PATH/TO/statewatch [FILE.md ...]")
    binary = os.path.abspath(sys.argv[1])
    if not os.access(binary, os.X_OK):
        sys.exit("test-doc-examples: %s is not built" % binary)
    files = sys.argv[2:] or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
        if f.endswith(".md"))
    failed = sum(run_file(binary, f) for f in files)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
