"""Crash safety: create+issue load while the server is killed with SIGKILL.

Run by `scripts/crash-test` (see docs/RELIABILITY.md). Argument 1 is JSON:
  {"bin": path of `invoicing`, "db": database URL, "data": data dir, "rounds": N, "seed": S,
   "servers": 1 or 2}
With "servers": 2 (PostgreSQL), two `serve --no-worker` processes and two
`invoicing worker` processes share the database; clients spread over both
servers and each round kills one process of the four at random.
A Spanish company (so every issued invoice gets a VERI*FACTU record) is driven
by 8 client threads creating and issuing invoices. At a random moment of each
round the server gets `kill -9`, is restarted on the same database, and the
load goes on. At the end every invariant is checked:
- every request answered 2xx is persisted as answered (drafts exist; issued
  invoices are issued with the number and reference the client was told);
- no half-issued invoice: an issued invoice has a number, a reference, an
  issue time and its frozen parties; a draft has none of them;
- numbers are unique and gapless per series and year, starting at 1;
- the VERI*FACTU chain is intact: one registration record per issued invoice,
  sequence numbers 1..N without gaps, each record linked to the previous huella;
- no background job died.
Prints a summary and "ok"; exits non-zero with the first violated invariant.
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import httpx

CFG = json.loads(sys.argv[1])
RNG = random.Random(CFG.get("seed", 1))
THREADS = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVERS = CFG.get("servers", 1)
PORTS = [free_port() for _ in range(SERVERS)]
BASES = [f"http://127.0.0.1:{p}" for p in PORTS]
BASE = BASES[0]
ENV = dict(
    os.environ,
    INVOICING_DATABASE_URL=CFG["db"],
    INVOICING_DATA_DIR=CFG["data"],
    INVOICING_FX_URL="",
    INVOICING_RATE_LIMIT_PER_MINUTE="0",
    INVOICING_LOG="warn",
)


def run(*args):
    out = subprocess.run([CFG["bin"], *args], env=ENV, capture_output=True, text=True, check=True)
    return json.loads(out.stdout) if out.stdout.strip() else None


def start(index=0):
    """Starts process `index`: servers first (0..SERVERS), then, with two servers, two workers."""
    log = open(os.path.join(CFG["data"], "serve.log"), "a")
    env = dict(ENV)
    if index >= SERVERS:
        return subprocess.Popen([CFG["bin"], "worker"], env=env, stdout=log, stderr=log)
    env["INVOICING_HTTP_ADDR"] = f"127.0.0.1:{PORTS[index]}"
    args = ["serve", "--no-mcp"] + (["--no-worker"] if SERVERS > 1 else [])
    proc = subprocess.Popen([CFG["bin"], *args], env=env, stdout=log, stderr=log)
    for _ in range(300):
        try:
            if httpx.get(BASES[index] + "/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}; see {CFG['data']}/serve.log")
        time.sleep(0.05)
    raise SystemExit("the server did not become ready")


os.makedirs(CFG["data"], exist_ok=True)
run("migrate")
boot = run(
    "admin", "bootstrap", "--company-name", "Crash Test SL", "--country", "ES",
    "--fiscal-id", "B12345674", "--legal-form", "SL", "--email", "owner@crash.test",
)
run("admin", "verifactu", "authorize", "--company", boot["company_id"], "--method", "document",
    "--note", "crash test")
HEADERS = {"Authorization": f"Bearer {boot['token']}", "X-Human-Proof": boot["human_proof"]}

procs = [start(i) for i in range(SERVERS + (2 if SERVERS > 1 else 0))]
client = httpx.Client(base_url=BASE, headers=HEADERS, timeout=10)
r = client.post(
    "/v1/company/registration",
    json={"name": "Crash Test SL", "fiscal_id": "B12345674", "email": "billing@crash.test", "phone": "+34 910 000 000",
          "address": {"lines": ["Calle Mayor 1"], "zipcode": "28001", "city": "Madrid", "country": "ES"}},
)
assert r.status_code == 200, r.text
for doc in client.get("/v1/agreements").json().get("data", []):
    client.post(f"/v1/agreements/{doc['id']}/accept")
customer = client.post(
    "/v1/entities",
    json={"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}},
)
assert customer.status_code == 201, customer.text
CUSTOMER = customer.json()["id"]

acked_drafts = set()
acked_issued = {}  # id -> (reference, number, year)
lock = threading.Lock()
stop = threading.Event()
counts = {"ok": 0, "failed": 0}


def worker(i):
    c = httpx.Client(base_url=BASES[i % SERVERS], headers=HEADERS, timeout=10)
    while not stop.is_set():
        try:
            d = c.post("/v1/invoices", json={"recipient_id": CUSTOMER, "lines": [{"concept": f"t{i}", "quantity": 1, "unit_price": 1000 + i}]})
            if d.status_code != 201:
                raise RuntimeError(f"create answered {d.status_code}: {d.text}")
            inv = d.json()["id"]
            with lock:
                acked_drafts.add(inv)
            r = c.post(f"/v1/invoices/{inv}/issue")
            if r.status_code == 200:
                body = r.json()
                with lock:
                    acked_issued[inv] = (body["reference"], body["invoice_number"], body["invoice_year"])
                    counts["ok"] += 1
            elif r.status_code >= 500:
                raise RuntimeError(f"issue answered {r.status_code}: {r.text}")
            else:
                raise SystemExit(f"issue refused with {r.status_code}: {r.text}")
        except (httpx.HTTPError, RuntimeError):
            with lock:
                counts["failed"] += 1
            time.sleep(0.05)


threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(THREADS)]
for t in threads:
    t.start()
for round_no in range(CFG["rounds"]):
    time.sleep(RNG.uniform(0.3, 2.0))
    victim = RNG.randrange(len(procs))
    procs[victim].send_signal(signal.SIGKILL)
    procs[victim].wait()
    what = "server" if victim < SERVERS else "worker"
    print(f"-- round {round_no + 1}: killed {what} {victim} after {counts['ok']} issued so far", flush=True)
    time.sleep(RNG.uniform(0.0, 0.3))
    procs[victim] = start(victim)
time.sleep(1.0)
stop.set()
for t in threads:
    t.join(timeout=15)


def stop_all():
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(timeout=30)


def fail(msg):
    stop_all()
    raise SystemExit(f"INVARIANT VIOLATED: {msg}")


def all_pages(path):
    items, cursor = [], None
    while True:
        q = f"{path}{'&' if '?' in path else '?'}limit=500" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(q).json()
        items += page["data"]
        cursor = page.get("next_cursor")
        if not cursor:
            return items


invoices = {i["id"]: i for i in all_pages("/v1/invoices")}
for inv in acked_drafts:
    if inv not in invoices:
        fail(f"draft {inv} was acknowledged (201) but is gone")
for inv, (ref, number, year) in acked_issued.items():
    got = invoices[inv]
    if got["status"] != "issued" or got["reference"] != ref or got["invoice_number"] != number or got["invoice_year"] != year:
        fail(f"invoice {inv} was acknowledged as issued {ref} but reads {got['status']} {got['reference']}")
series = {}
for inv in invoices.values():
    if inv["status"] == "issued":
        if not (inv["reference"] and inv["invoice_number"] and inv["issued_at"] and inv.get("issuer") and inv.get("recipient")):
            fail(f"half-issued invoice {inv['id']}: {inv}")
        series.setdefault((inv["series"], inv["invoice_year"]), []).append(inv["invoice_number"])
    elif inv["invoice_number"] is not None or inv["reference"] is not None or inv["issued_at"] is not None:
        fail(f"a draft carries issue data: {inv}")
for key, numbers in series.items():
    if sorted(numbers) != list(range(1, len(numbers) + 1)):
        fail(f"numbers of {key} are not 1..{len(numbers)} without gaps or repeats: {sorted(numbers)}")
issued = [i for i in invoices.values() if i["status"] == "issued"]
records = []
for inv in issued:
    data = client.get(f"/v1/invoices/{inv['id']}/verifactu").json()["data"]
    altas = [r for r in data if r["kind"] == "alta"]
    if len(altas) != 1:
        fail(f"invoice {inv['reference']} has {len(altas)} registration records")
    records += data
records.sort(key=lambda r: r["seq"])
if [r["seq"] for r in records] != list(range(1, len(records) + 1)):
    fail(f"the chain's sequence has gaps or repeats: {[r['seq'] for r in records]}")
for prev, cur in zip(records, records[1:]):
    if cur["previous_huella"] != prev["huella"]:
        fail(f"record {cur['seq']} links to {cur['previous_huella']}, not to {prev['huella']}")
dead = run("admin", "jobs", "list", "--status", "dead")["data"]
if dead:
    fail(f"dead jobs: {dead}")
stop_all()
print(
    f"-- {SERVERS} server(s); {CFG['rounds']} kills; {len(acked_issued)} issues acknowledged, {len(issued)} invoices issued, "
    f"{len(invoices) - len(issued)} drafts, {len(records)} chained records, {counts['failed']} requests cut by a kill"
)
print("ok")
