"""What the cluster scripts share (stdlib only): the engine's partition hash, HTTP calls that
tell "refused before it landed" from "answer lost", and a local cluster of processes — etcd
members, nats-servers with JetStream and statewatch nodes — on loopback, described by a
state file so that another process (scripts/cluster-up.sh --down) can stop it.

Used by scripts/cluster-smoke.py, cluster-up.sh (cluster_up.py), cluster-chaos.py and
cluster-failover-bench.py.
"""
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request

# ---- XXH64 (seed 0), as the engine routes an agent's sessions: XXH64(agentId) mod P ---------
_M = (1 << 64) - 1
_P1, _P2, _P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
_P4, _P5 = 9650029242287828579, 2870177450012600261


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc, lane):
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def xxh64(data, seed=0):
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed, (seed - _P1) & _M]
        while i + 32 <= n:
            for j in range(4):
                v[j] = _round(v[j], struct.unpack_from("<Q", data, i + 8 * j)[0])
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
        for x in v:
            h = ((h ^ _round(0, x)) * _P1 + _P4) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        h ^= _round(0, struct.unpack_from("<Q", data, i)[0])
        h = (_rotl(h, 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * _P1) & _M
        h = (_rotl(h, 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M
        h = (_rotl(h, 11) * _P1) & _M
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    return h ^ (h >> 32)


assert xxh64(b"") == 0xEF46DB3751D8E999 and xxh64(b"abc") == 0x44BC2CF5AD770999


def agents_of(partitions, p, prefix, count):
    """The first `count` agent ids prefix0, prefix1, ... whose sessions live in partition p."""
    out = []
    for k in range(100000):  # bounded: 1 in P ids hash into p
        a = "%s%d" % (prefix, k)
        if xxh64(a.encode()) % partitions == p:
            out.append(a)
            if len(out) == count:
                return out
    raise RuntimeError("no %d agents hash into partition %d" % (count, p))


# ---- HTTP ------------------------------------------------------------------------------------
def post(url, body, timeout=25):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def get(url, timeout=25):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class NotLanded(Exception):
    """The request was refused before it could change anything: safe to retry anywhere."""


def call(fn):
    """fn() with the answers that mean "nothing changed" (503, 421, connection refused)
    raised as NotLanded; any other failure (a timeout, a reset: the answer was lost) as is."""
    try:
        return fn()
    except urllib.error.HTTPError as e:
        if e.code in (503, 421):
            raise NotLanded("HTTP %d" % e.code)
        raise
    except urllib.error.URLError as e:
        if isinstance(e.reason, ConnectionRefusedError):
            raise NotLanded("connection refused")
        raise
    except ConnectionRefusedError:
        raise NotLanded("connection refused")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(what, predicate, seconds, step=0.1):
    """Polls predicate() until it is true; bounded by `seconds`; raises naming `what`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (urllib.error.URLError, OSError, ValueError, KeyError):
            pass
        time.sleep(step)
    raise RuntimeError("%s: not within %.0f s" % (what, seconds))


# ---- a local cluster -------------------------------------------------------------------------
def find_binary(name, fallbacks=()):
    path = shutil.which(name)
    if path:
        return path
    for f in fallbacks:
        if os.path.exists(f):
            return f
    raise RuntimeError("%s is not installed (scripts/install-deps.sh installs it)" % name)


class LocalCluster:
    """etcd members, nats-servers and statewatch nodes under one directory.

    Every process gets fixed loopback ports chosen at `create`, so a restarted process comes
    back at the same address. The state (ports, pids, options) is DIR/cluster.json; a process
    writes its output to DIR/<name>.log and its data under DIR/<name>/.
    """

    def __init__(self, directory, state):
        self.dir = directory
        self.state = state

    # -- creation and the state file --
    @classmethod
    def create(cls, directory, statewatch, nodes=3, partitions=4, etcd_members=3,
               nats_servers=3, lease_ttl=5, checkpoint_every=10000, name="local",
               node_args=()):
        """A new cluster's state at `directory`; `node_args` are more `serve` flags for every
        node (kept in the state file, so a restarted node gets them too)."""
        os.makedirs(directory, exist_ok=True)
        if os.path.exists(os.path.join(directory, "cluster.json")):
            raise RuntimeError("%s already holds a cluster (stop it with --down first)" % directory)
        taken = set()

        def port():  # free now, and not handed to another member of this cluster
            for _ in range(100):
                p = free_port()
                if p not in taken:
                    taken.add(p)
                    return p
            raise RuntimeError("no free port not already taken by this cluster")
        st = {"statewatch": os.path.abspath(statewatch), "name": name, "partitions": partitions,
              "leaseTtl": lease_ttl, "checkpointEvery": checkpoint_every,
              "nodeArgs": list(node_args),
              "etcd": [{"name": "e%d" % i, "client": port(), "peer": port()}
                       for i in range(etcd_members)],
              "nats": [{"name": "n%d" % i, "client": port(), "route": port(),
                        "monitor": port()} for i in range(nats_servers)],
              "nodes": [{"name": "node%d" % i, "port": port()} for i in range(nodes)],
              "pids": {}}
        c = cls(directory, st)
        c.save()
        return c

    @classmethod
    def load(cls, directory):
        with open(os.path.join(directory, "cluster.json")) as f:
            return cls(directory, json.load(f))

    def save(self):
        tmp = os.path.join(self.dir, "cluster.json.tmp")
        with open(tmp, "w") as f:
            json.dump(self.state, f, indent=1)
        os.replace(tmp, os.path.join(self.dir, "cluster.json"))

    # -- addresses --
    def etcd_urls(self):
        return ",".join("http://127.0.0.1:%d" % e["client"] for e in self.state["etcd"])

    def nats_urls(self):
        return ",".join("nats://127.0.0.1:%d" % n["client"] for n in self.state["nats"])

    def node_names(self):
        return [n["name"] for n in self.state["nodes"]]

    def node_url(self, name):
        return "http://127.0.0.1:%d" % self._node(name)["port"]

    def _node(self, name):
        for n in self.state["nodes"]:
            if n["name"] == name:
                return n
        raise KeyError(name)

    # -- processes --
    def _spawn(self, name, argv):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.state["pids"][name] = proc.pid
        self.save()
        return proc

    def pid(self, name):
        return self.state["pids"].get(name)

    def alive(self, name):
        pid = self.pid(name)
        if not pid:
            return False
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        # A zombie child counts as dead.
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False

    def exited_on_their_own(self):
        """The nodes this cluster started and did not kill that are no longer running (a
        crash): a chaos run's faults stop and restart nodes, never leave one dead."""
        return [n for n in self.node_names() if self.pid(n) and not self.alive(n)]

    def signal(self, name, sig):
        pid = self.pid(name)
        if pid:
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def kill(self, name):
        """kill -9, then reaps it if it is our child (bounded)."""
        pid = self.pid(name)
        if not pid:
            return
        self.signal(name, signal.SIGCONT)
        self.signal(name, signal.SIGKILL)
        for _ in range(50):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    break
            except ChildProcessError:
                break
            time.sleep(0.02)
        self.state["pids"].pop(name, None)
        self.save()

    def start_etcd(self, i):
        e = self.state["etcd"][i]
        initial = ",".join("%s=http://127.0.0.1:%d" % (m["name"], m["peer"])
                           for m in self.state["etcd"])
        etcd = find_binary("etcd", ["/usr/bin/etcd"])
        return self._spawn(e["name"], [
            etcd, "--name", e["name"], "--data-dir", os.path.join(self.dir, e["name"]),
            "--listen-client-urls", "http://127.0.0.1:%d" % e["client"],
            "--advertise-client-urls", "http://127.0.0.1:%d" % e["client"],
            "--listen-peer-urls", "http://127.0.0.1:%d" % e["peer"],
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % e["peer"],
            "--initial-cluster", initial, "--initial-cluster-state", "new",
            "--initial-cluster-token", "statewatch-" + self.state["name"]])

    def start_nats(self, i):
        n = self.state["nats"][i]
        routes = ", ".join('"nats-route://127.0.0.1:%d"' % m["route"] for m in self.state["nats"])
        conf = os.path.join(self.dir, n["name"] + ".conf")
        with open(conf, "w") as f:
            f.write('server_name: "%s"\nlisten: "127.0.0.1:%d"\nhttp: "127.0.0.1:%d"\n'
                    'jetstream { store_dir: "%s" }\n'
                    'cluster { name: "sw", listen: "127.0.0.1:%d", routes: [%s] }\n'
                    % (n["name"], n["client"], n["monitor"], os.path.join(self.dir, n["name"]),
                       n["route"], routes))
        nats = find_binary("nats-server", ["/usr/sbin/nats-server", "/usr/bin/nats-server"])
        return self._spawn(n["name"], [nats, "-c", conf])

    def start_node(self, name):
        n = self._node(name)
        port_file = os.path.join(self.dir, name + ".port")
        if os.path.exists(port_file):
            os.remove(port_file)
        return self._spawn(name, [
            self.state["statewatch"], "serve", "--data", os.path.join(self.dir, name),
            "--listen", "127.0.0.1:%d" % n["port"], "--port-file", port_file,
            "--cluster", self.nats_urls(), "--etcd", self.etcd_urls(),
            "--cluster-name", self.state["name"], "--node-id", name,
            "--partitions", str(self.state["partitions"]),
            "--lease-ttl", str(self.state["leaseTtl"]),
            "--cluster-checkpoint-every", str(self.state["checkpointEvery"])] +
            self.state.get("nodeArgs", []))

    def wait_etcd(self, seconds=30):
        def healthy():
            for e in self.state["etcd"]:
                if json.loads(get("http://127.0.0.1:%d/health" % e["client"], 2)).get(
                        "health") == "true":
                    return True
            return False
        wait_for("an etcd member healthy", healthy, seconds)

    def wait_nats(self, seconds=60):
        """Until a nats-server names a JetStream meta leader (any of them: one that could not
        start, say its port was taken meanwhile, must not hide the others'); bounded. The
        error names the servers not running, with their logs' last lines."""
        def leader():
            for n in self.state["nats"]:
                try:
                    jsz = json.loads(get("http://127.0.0.1:%d/jsz" % n["monitor"], 2))
                except (urllib.error.URLError, OSError, ValueError):
                    continue
                if jsz.get("meta_cluster", {}).get("leader"):
                    return True
            return False
        try:
            wait_for("a JetStream meta leader", leader, seconds)
        except RuntimeError as e:
            dead = [n["name"] for n in self.state["nats"] if not self.alive(n["name"])]
            tails = ["--- %s\n%s" % (path, log_tail(path, 5)) for path in
                     (os.path.join(self.dir, n["name"] + ".log") for n in self.state["nats"])
                     if os.path.exists(path)]
            raise RuntimeError("%s; nats-servers not running: %s\n%s" % (
                e, ", ".join(dead) or "none", "".join(tails)))

    def wait_node(self, name, seconds=30):
        port_file = os.path.join(self.dir, name + ".port")
        wait_for("node %s listening" % name, lambda: os.path.getsize(port_file) > 0, seconds)

    def up(self):
        for i in range(len(self.state["etcd"])):
            self.start_etcd(i)
        for i in range(len(self.state["nats"])):
            self.start_nats(i)
        self.wait_etcd()
        self.wait_nats()
        for name in self.node_names():
            self.start_node(name)
        for name in self.node_names():
            self.wait_node(name)

    def down(self):
        for name in list(self.state["pids"]):
            self.kill(name)

    # -- the cluster as the nodes report it --
    def status(self, timeout=1.5):
        """The cluster status from the first node that answers; None when none does."""
        for name in self.node_names():
            if not self.alive(name):
                continue
            try:
                return json.loads(get(self.node_url(name) + "/v1/cluster/status", timeout))
            except (urllib.error.URLError, OSError, ValueError):
                continue
        return None

    def owner_urls(self, ready_only=True):
        """{partition: owner slot URL} for the partitions that are ready (or, without
        `ready_only`, whose named owner publishes a slot, serving or not yet)."""
        s = self.status()
        if not s:
            return {}
        return {p["partition"]: p["ownerUrl"] for p in s["partitions"]
                if p.get("ownerUrl") and (p.get("ready") or not ready_only)}

    def wait_ready(self, seconds=60, standbys=True):
        """Every partition has a serving owner (and, with `standbys`, a standby); bounded."""
        def ready():
            s = self.status()
            if not s or len(s["partitions"]) != self.state["partitions"]:
                return False
            return all(p.get("ready") and (not standbys or p.get("standby"))
                       for p in s["partitions"])
        wait_for("every partition ready", ready, seconds, step=0.2)

    def wait_settled(self, seconds=90, quiet=1.5):
        """wait_ready, then until no assignment changed for `quiet` seconds (the balancer has
        finished moving partitions back to a node that rejoined); bounded."""
        self.wait_ready(seconds)
        deadline = time.monotonic() + seconds
        last, since = None, time.monotonic()
        while time.monotonic() < deadline:
            s = self.status()
            now = None if not s else [(p["owner"], p["standby"], p["epoch"], p.get("ready"))
                                      for p in s["partitions"]]
            if now != last:
                last, since = now, time.monotonic()
            elif now and all(x[3] for x in now) and time.monotonic() - since >= quiet:
                return
            time.sleep(0.1)
        raise RuntimeError("assignments still changing after %.0f s" % seconds)

    def controller(self):
        s = self.status()
        return s.get("controller") if s else None


# ---- load -----------------------------------------------------------------------------------
WRK_EVENTS_SCRIPT = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local session = os.getenv("SW_SESSION")
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, "/v1/events", nil, string.format(
    '{"sessionKey":"%s","kind":"human_direct_message","actorType":"human","summary":"wrk %d"}',
    session, n))
end
"""


def wrk_events(work_dir, url, session, seconds):
    """Events/s wrk sustains on url with 4 connections, one event per request into `session`
    (every answer must be 2xx)."""
    script = os.path.join(work_dir, "events.lua")
    with open(script, "w") as f:
        f.write(WRK_EVENTS_SCRIPT)
    out = subprocess.run(["wrk", "-t1", "-c4", "-d%ds" % seconds, "-s", script, url],
                         capture_output=True, text=True, env=dict(os.environ, SW_SESSION=session),
                         timeout=seconds + 60).stdout
    if "Non-2xx" in out or "Requests/sec:" not in out:
        raise RuntimeError("wrk saw refused requests:\n" + out)
    return float(out.split("Requests/sec:")[1].split()[0])


def log_tail(path, lines):
    """The last `lines` lines of the file at `path`, as one string."""
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def print_log_tails(cluster, work, failure=None, lines=8):
    """The last `lines` lines of each node's log in `work`: what a failed run shows. With
    `failure` (what broke), it is said above them and again below, as a CI log often shows
    only its last lines."""
    if failure:
        print(failure, flush=True)
    dead = set(cluster.exited_on_their_own())
    for name in cluster.node_names():
        path = os.path.join(work, name + ".log")
        if os.path.exists(path):
            print("--- " + path + (" (the process exited on its own)" if name in dead else ""))
            print(log_tail(path, lines), end="", flush=True)
    if failure:
        print(failure + " (the nodes' log tails are above)", flush=True)


def report(result, out=None):
    """Prints a bench's result as one JSON line and, with `out`, writes it there indented."""
    print(json.dumps(result), flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
