#!/usr/bin/env python3
"""What a job file asks for, for jobs/run and jobs/sweep, so that a run does
what its caller asked or does not start.

  jobfile.py prepare JOB OUT [fio args...]   check, then write JOB ready to run to OUT
  jobfile.py list                            each job file in jobs/ and what it reads

A job file is found as given or by name in jobs/; its include lines are
resolved next to it, then in jobs/ (a copy of a job file elsewhere still finds
common.fio.inc), and inlined, so the prepared file is self-contained.
"""
import os
import re
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The variables jobs/run gives every job file (with defaults): one that the
# caller sets and the job file does not read would change nothing.
WORKLOAD_VARS = ("RW", "BS", "IODEPTH", "NUMJOBS", "OFFSET_INCREMENT", "CPUS", "RUNTIME", "RAMP", "REGION")
# Variables jobs/run turns into our engine's options, whatever the job file.
ENGINE_VARS = (("QPAIRS", "qpairs"), ("QPAIRS_SHARED", "qpairs_shared"), ("HCA_EXPECT", "hca"), ("GPU", "gpu"), ("NUMA_NODE", "numa_node"),
               ("HUGEPAGES", "hugepages"), ("RELAXED_ORDERING", "relaxed_ordering"),
               ("HW_TIMESTAMPS", "hw_timestamps"), ("COMP_VECTOR", "comp_vector"))
# fio's other names for the options a job file most often fixes
ALIASES = {"readwrite": "rw", "blocksize": "bs", "ioengine": "ioengine", "io_size": "io_size"}
# the engine's options (fio --enghelp=libnvmeof_fio.so)
ENGINE_OPTIONS = set("""traddr trsvcid subnqn ns hostnqn hostid dhchap_secret dhchap_ctrl_secret
 dhchap_secret_file dhchap_ctrl_secret_file dhchap_hashes dhchap_dhgroups allow_unauthenticated_ctrl
 src_addr gpu gpu_copy gpu_flush relaxed_ordering hw_timestamps comp_vector tcp_priority tcp_tos
 tcp_busy_poll tcp_zerocopy numa_node hugepages hca qd_limit kato reconnect_delay ctrl_loss_tmo
 cmd_timeout connect_timeout connect_retries in_capsule hdr_digest data_digest digest_enable wait qpairs
 qpairs_shared qpair_select iopolicy quiesce_time path_loss num_io_queues delay_cmd_submit spin_us verbose quiet""".split())


class Refused(Exception):
    pass


def job_names():
    return sorted(f for f in os.listdir(HERE) if f.endswith(".fio"))


def job_path(name):
    for p in (name, os.path.join(HERE, name)):
        if os.path.isfile(p):
            return os.path.abspath(p)
    raise Refused(f"job file '{name}' not found (looked in {os.getcwd()} and {HERE}; there: "
                  + ", ".join(job_names()) + ")")


def job_text(path, seen=()):
    """The job file with its include lines inlined: each include is looked up
    next to the including file, then in jobs/."""
    if path in seen:
        raise Refused(f"{path} includes itself")
    out = []
    with open(path) as fh:
        for line in fh:
            m = re.match(r"\s*include\s+(\S+)\s*$", line)
            if not m:
                out.append(line)
                continue
            name = m.group(1)
            cands = [name] if os.path.isabs(name) else [os.path.join(os.path.dirname(path), name),
                                                         os.path.join(HERE, name)]
            inc = next((c for c in cands if os.path.isfile(c)), None)
            if inc is None:
                raise Refused(f"{path}: included file {name} not found (looked in " + " and ".join(cands) + ")")
            out.append(job_text(os.path.abspath(inc), seen + (path,)))
            if not out[-1].endswith("\n"):
                out.append("\n")
    return "".join(out)


VAR = r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}"


def reads(text):
    """The ${VAR}s the job file reads, comment lines left out: one read only by
    an option that a later line of the file sets again (verify.fio's runtime=0
    after common.fio.inc's runtime=${RUNTIME}) changes nothing, and is not read."""
    body = "\n".join(l for l in text.splitlines() if not re.match(r"\s*[;#]", l))
    every = set(re.findall(VAR, body))
    in_options = set()
    for line in body.splitlines():
        s = line.strip()
        if s and s[0] != "[" and not s.startswith("${") and "=" in s:
            in_options |= set(re.findall(VAR, s.partition("=")[2]))
    final = set(re.findall(VAR, "\n".join(sets(text).values())))
    return (every - in_options) | final


def sets(text):
    """option -> value for every option line (the last value; sections merged)."""
    out = {}
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in ";#[" or s.startswith("${"):
            continue
        k, _, v = s.partition("=")
        out[ALIASES.get(k.strip(), k.strip())] = v.strip()
    return out


def fixed(text):
    """The workload options the job file sets to a value of its own."""
    s = sets(text)
    return [f"{k}={s[k]}" for k in ("rw", "bs", "iodepth", "numjobs") if k in s and "${" not in s[k]]


def fio_arg_name(a):
    m = re.match(r"--([A-Za-z0-9_]+)(=|$)", a)
    return ALIASES.get(m.group(1), m.group(1)) if m else None


def prepare(job, outp, fio_args, env):
    path = job_path(job)
    base = os.path.basename(path)
    text = job_text(path)
    read, opts = reads(text), sets(text)
    ours = env.get("INITIATOR", "ours") == "ours"
    caller = env.get("JOBS_CALLER_SET", "").split()
    for v in caller:
        if v in WORKLOAD_VARS and v not in read:
            fx = fixed(text)
            raise Refused(f"{base} does not read {v}, so {v}={env.get(v, '')} would change nothing"
                          + (f" (it fixes {' '.join(fx)})" if fx else "") + ": unset it, or use a job file that reads "
                          f"${{{v}}} (jobs/run --list)")
    engine, keep = [], []
    for a in fio_args:
        name = fio_arg_name(a)
        if not name:
            keep.append(a)
            continue
        if name in ENGINE_OPTIONS and name not in opts:
            if not ours:
                raise Refused(f"{a} is an option of our engine, and INITIATOR={env.get('INITIATOR')}")
            # fio knows an engine's options only after ioengine=, which is in the job file
            engine.append(a[2:])
            continue
        if name in opts and a.partition("=")[2] != opts[name]:  # the same value changes nothing
            val = opts[name]
            m = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", val)
            hint = (f"set {m.group(1)}={a.partition('=')[2]} instead" if m and m.group(1) in WORKLOAD_VARS
                    else "jobs/run sets it from the environment (jobs/run --help)" if m
                    else f"copy {base} and change it there, or use a job file that reads a variable for it "
                         "(jobs/run --list)")
            raise Refused(f"{base} sets {name}={val} itself, and fio lets the job file win over {a}: {hint}")
        keep.append(a)
    if ours:
        for var, opt in ENGINE_VARS:
            if env.get(var):
                engine.append(f"{opt}={env[var]}")
        try:
            extra = shlex.split(env.get("ENGINE_OPTS", ""))
        except ValueError as e:
            raise Refused(f"ENGINE_OPTS: {e}")
        for o in extra:
            o = o[2:] if o.startswith("--") else o
            if not re.fullmatch(r"[a-z_0-9]+(=.*)?", o):
                raise Refused(f"ENGINE_OPTS: '{o}' is not option=value (e.g. ENGINE_OPTS='wait=poll qpairs=1')")
            if o.partition("=")[0] not in ENGINE_OPTIONS:
                raise Refused(f"ENGINE_OPTS: '{o.partition('=')[0]}' is not an option of our engine "
                              "(fio --enghelp=libnvmeof_fio.so lists them)")
            engine.append(o)
        for o in engine:  # a line of the job file's own would win over the one put after ioengine=
            k, _, v = o.partition("=")
            if k in opts and opts[k] != v:
                raise Refused(f"{base} sets {k}={opts[k]} itself, which wins over {o} (from QPAIRS and the like, "
                              f"ENGINE_OPTS or a fio arg): copy {base} and change it there")
    elif env.get("ENGINE_OPTS"):
        raise Refused(f"ENGINE_OPTS is for our engine, and INITIATOR={env.get('INITIATOR')}")
    lines, placed = [], False
    for line in text.splitlines(keepends=True):
        lines.append(line)
        if engine and re.match(r"\s*ioengine\s*=", line):
            lines.append("".join(o + "\n" for o in engine))
            placed = True
    if engine and not placed:
        raise Refused(f"{base} sets no ioengine=, so engine options ({' '.join(engine)}) have no place")
    with open(outp, "w") as fh:
        fh.write(f"; {path}, prepared by jobs/run\n" + "".join(lines))
    with open(outp + ".args", "w") as fh:
        fh.write("".join(a + "\0" for a in keep))


def listing():
    out = ["Job files in " + HERE + " (the variables each reads; the options it fixes):"]
    for name in job_names():
        text = job_text(os.path.join(HERE, name))
        first = next((l.lstrip(";# ").strip() for l in text.splitlines() if l.startswith(";")), "")
        rv = [v for v in WORKLOAD_VARS if v in reads(text)]
        own = sorted(reads(text) - set(WORKLOAD_VARS) - {"IOENGINE", "FILENAME"})
        fx = fixed(text)
        out.append(f"  {name}")
        if first:
            out.append(f"      {first[:100]}")
        out.append("      reads: " + (" ".join(rv + own) or "nothing (a standalone file)")
                   + ("; fixes: " + " ".join(fx) if fx else ""))
    out.append("Every job file run with our engine also takes ENGINE_OPTS and "
               + ", ".join(v for v, _ in ENGINE_VARS) + " (jobs/run --help).")
    return "\n".join(out) + "\n"


def main(argv):
    try:
        if argv[:1] == ["list"]:
            sys.stdout.write(listing())
        elif argv[:1] == ["prepare"] and len(argv) >= 3:
            prepare(argv[1], argv[2], argv[3:], os.environ)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (Refused, OSError) as e:
        print(f"jobs/run: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
