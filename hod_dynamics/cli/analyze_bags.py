"""``hod-dynamics analyze-bags``: many bags on local processes or a Dask cluster, with the progress
lines and the fleet's summary."""

import os
import sys
import warnings

from ..errors import CommandError
from .analyze_bag import BAG_MAX_ORDER
from .common import (OUTPUTS, PROG, add_description_options, duration_text, model_options, order_type,
                     output_folder, plots_possible, positive, probability)


class _FleetProgress:
    """``progress(p)`` of :func:`~hod_dynamics.fleet.run`: on a terminal a one-line bar
    (bags done / total, rate, ETA) on stderr; otherwise one plain line per bag finished."""

    def __init__(self, enabled, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.bar = enabled and self.stream.isatty()

    def __call__(self, p):
        if not self.enabled:
            return
        if p.name is None:      # before the first task
            if p.skipped:
                print(f"{p.skipped} of {p.total} bags complete from an earlier run with the same settings "
                      "(--force redoes them)", file=self.stream, flush=True)
            if self.bar and p.done < p.total:
                self._bar(p)
            return
        if self.bar:
            if p.status != "ok":
                print(f"\r\033[K{p.name}: {p.status}", file=self.stream)
            self._bar(p)
        else:
            rate = f", {p.rate:.3g} bags/min, ETA {duration_text(p.eta)}" if p.done < p.total else ""
            print(f"[{p.done}/{p.total}] {p.name}: {p.status} ({p.seconds:.1f} s){rate}", file=self.stream,
                  flush=True)

    def _bar(self, p):
        width = 25
        filled = int(width * p.done / p.total) if p.total else width
        rate = f"{p.rate:.3g} bags/min" if p.analysed else "-- bags/min"
        print(f"\r\033[Kbags [{'#' * filled}{'.' * (width - filled)}] {p.done}/{p.total}  {rate}  ETA "
              f"{duration_text(p.eta)}", end="\n" if p.done >= p.total else "", file=self.stream, flush=True)


def _urdf_spec(items):
    """The --urdf values: one URDF (file or shipped name) or a YAML mapping file for every bag,
    or PATTERN=URDF pairs (first match wins)."""
    if len(items) == 1 and "=" not in items[0] or len(items) == 1 and os.path.exists(items[0]):
        return items[0]
    mapping = {}
    for item in items:
        pattern, sep, urdf = item.partition("=")
        if not sep or not pattern or not urdf:
            raise CommandError(f"--urdf '{item}': give one URDF for every bag, or PATTERN=URDF for each group of "
                               "bags (repeat the flag), or a YAML file mapping patterns to URDFs")
        mapping[pattern] = urdf
    return mapping


def cmd_analyze_bags(args):
    """Replay analysis of many recorded bags, in parallel: each bag as analyze-bag analyses it
    (its outputs in DIR/<bag>/), on a local pool of worker processes (--workers) or a Dask cluster
    (--dask). Writes DIR/fleet.parquet (one row per bag and joint: residual, efforts, friction
    with standard errors, status), DIR/trends.png, DIR/trends.csv and DIR/fleet_summary.txt (the
    robots and joints whose friction or residual moved beyond the threshold over the recording
    time). A bag that cannot be analysed gets a row with its error; the others go on. A re-run
    with the same --out skips the bags complete with the same settings (--force redoes them);
    Ctrl-C stops and leaves the table of what finished."""
    from ..errors import HodDynamicsWarning, URDFExtensionWarning
    from ..fleet.run import analyze_bags, require

    if args.workers is not None and args.dask:
        raise CommandError("--workers and --dask exclude each other: the cluster has its own workers")
    require(serial=args.workers == 0)       # before anything is created
    model_kwargs = model_options(args)
    output_folder(args.out)
    plot = plots_possible(args.no_plot)
    show = _FleetProgress(not args.no_progress)

    def progress(p):
        if p.name is None:      # the inputs are checked and the run starts: what it writes is kept
            OUTPUTS[:] = [entry for entry in OUTPUTS if entry[0] != args.out]
        show(p)

    client = None
    if args.dask:
        client = _dask_client(args.dask)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", HodDynamicsWarning)
            frame = analyze_bags(args.bags, _urdf_spec(args.urdf), args.out, friction=args.friction,
                                 time_base=args.time_base, order=args.order, joint_states=args.joint_states,
                                 plots=plot, derived_bag=not args.no_derived_bag,
                                 samples_csv=not args.no_samples_csv, workers=args.workers,
                                 client=client, force=args.force, progress=progress, false_alarm=args.false_alarm,
                                 drift_change=args.drift_change / 100.0, model_kwargs=model_kwargs)
    except KeyboardInterrupt:
        from ..fleet.run import TABLE

        print(f"{PROG}: interrupted; {os.path.join(args.out, TABLE)} holds the bags that finished (run the "
              "same command again to go on)", file=sys.stderr)
        return 130
    finally:
        if client is not None:
            client.close()
    for w in caught:
        if issubclass(w.category, HodDynamicsWarning) and not issubclass(w.category, URDFExtensionWarning):
            print(f"warning: {w.message}", file=sys.stderr)
    bags = frame.drop_duplicates("bag")
    failed = bags[bags["status"] != "ok"]
    print(f"{len(bags)} bags: {len(bags) - len(failed)} analysed, {len(failed)} not (listed in the summary)")
    from ..fleet.trends import FIGURE, SUMMARY, TABLE as TRENDS

    with open(os.path.join(args.out, SUMMARY), encoding="utf-8") as fh:
        print(fh.read(), end="")
    for name in ("fleet.parquet", SUMMARY, TRENDS) + ((FIGURE,) if plot else ()):
        print(f"wrote {os.path.join(args.out, name)}")
    return 0


def _reachable(address):
    """Refuse a tcp:// address where nothing listens at once (the client would retry for its
    whole timeout); other schemes are left to the client."""
    import socket
    from urllib.parse import urlsplit

    if not address.startswith("tcp://"):
        return
    try:
        parts = urlsplit(address)
        host, port = parts.hostname, parts.port
    except ValueError:
        raise CommandError(f"--dask {address}: not an address (tcp://host:port)") from None
    if host is None or port is None:
        raise CommandError(f"--dask {address}: not an address (tcp://host:port)")
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as exc:
        raise CommandError(f"--dask {address}: cannot connect to the scheduler ({exc.strerror or exc})") from None


def _dask_client(address):
    """A distributed.Client connected to the scheduler at ``address`` (tcp://host:8786)."""
    from distributed import Client

    _reachable(address)
    try:
        return Client(address, timeout=30, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        detail = " ".join(str(exc).split())
        raise CommandError(f"--dask {address}: cannot connect to the scheduler ({detail})") from None


def add_parser(sub):
    bags = sub.add_parser("analyze-bags", help="many bags in parallel (local processes or a Dask cluster), one "
                                               "table of trends", description=cmd_analyze_bags.__doc__)
    bags.add_argument("bags", nargs="+", metavar="BAG_OR_GLOB",
                      help="bags (rosbag2 folders, .db3/.mcap files, ROS 1 .bag), glob patterns of them (quoted: "
                           "'bags/**/*.mcap'), or fsspec URLs (file://, s3:// with s3fs, zip://BAG::file://ZIP)")
    bags.add_argument("--urdf", required=True, action="append", metavar="URDF|PATTERN=URDF",
                      help="URDF or xacro file (or shipped robot name) of every bag; for a fleet of mixed robots "
                           "PATTERN=URDF per group (fnmatch on the bag name, first match wins; repeat the flag) or "
                           "a YAML file mapping PATTERN to URDF or to {urdf: URDF, robot: NAME}")
    bags.add_argument("--out", required=True, metavar="DIR",
                      help="output folder: DIR/<bag>/ per bag, fleet.parquet, trends.png, trends.csv, "
                           "fleet_summary.txt")
    bags.add_argument("--friction", metavar="fit|FILE", help="as for analyze-bag; fit gives the friction trends")
    bags.add_argument("--workers", type=int, metavar="N",
                      help="worker processes of the local pool (default: the number of CPUs)")
    bags.add_argument("--dask", metavar="ADDRESS",
                      help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786) instead; its "
                           "workers need hod_dynamics installed and must see the bags and DIR at the same paths")
    bags.add_argument("--time-base", choices=("auto", "header", "receive", "index"), default="auto",
                      help="sample times, as for analyze-bag (default auto)")
    bags.add_argument("--order", type=order_type(BAG_MAX_ORDER), default=2, metavar=f"0..{BAG_MAX_ORDER}",
                      help="highest torque derivative of the per-bag outputs (default 2)")
    bags.add_argument("--joint-states", metavar="TOPIC",
                      help="sensor_msgs/JointState topic (default: the only one in each bag)")
    bags.add_argument("--force", action="store_true",
                      help="redo the bags an earlier run with the same --out completed (default: skip them)")
    bags.add_argument("--false-alarm", type=probability, default=0.01, metavar="P",
                      help="a trend is named when significant at this probability of naming any series of the "
                           "fleet that did not move (default 0.01) ...")
    bags.add_argument("--drift-change", type=positive, default=5.0, metavar="PERCENT",
                      help="... and changing the quantity by PERCENT %% of its level over the span (default 5)")
    add_description_options(bags, "lock a joint the bags do not record at VALUE rad (m) (repeat the flag)", loops=True)
    bags.add_argument("--no-plot", action="store_true", help="skip the PNG plots (per bag and trends.png)")
    bags.add_argument("--no-derived-bag", action="store_true", help="skip derived.mcap of each bag")
    bags.add_argument("--no-samples-csv", action="store_true",
                      help="skip samples.csv of each bag (with --no-derived-bag, a 10-minute 1 kHz bag leaves a few "
                           "MB instead of more than 1 GB)")
    bags.add_argument("--no-progress", action="store_true", help="no progress bar or lines on stderr")
    bags.set_defaults(func=cmd_analyze_bags)
