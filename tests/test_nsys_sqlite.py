"""Nsight Systems backend: real nsys SQLite exports read into metrics, the nsys command lines.

The exports are public files other projects committed (tests/fixtures/nsys_exports.md
says which, from where, and what each holds): nsys cannot record on our GPU machines.
Expected numbers come from plain SQL on the same file, not from the parser's own code.
Only the CUDA-graph test uses tables built here, because no public export has graph
kernels: it is marked synthetic and checks shapes, not measurements.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import sqlite3
import statistics
import stat
from pathlib import Path

import pytest

from tutor.errors import EnvironmentProblem, TutorError
from tutor.metrics import describe
from tutor.profilers import nsys_run, nsys_sqlite
from tutor.profilers.nsys_sqlite import extract

FIXTURES = Path(__file__).parent / "fixtures"
SAXPY = "nsys_saxpy_2022.2.sqlite.gz"
NVFUSER = "nsys_nvfuser_2025.1.sqlite.gz"
NO_KERNELS = "nsys_no_kernels_2025.1.sqlite.gz"
UPSTREAM_BLOBS = {SAXPY: "4f6385d65dc3b902a1887dc06f22f59f0d7718b0",
                  NVFUSER: "57da9a1f207d2b6c72138474eae14d020702b3df",
                  NO_KERNELS: "55daaac0263bfd7f9179ce6ece9c7a5842248b96"}
FUSION_RUN = "FusionExecutorCache::runFusionWithInputs"
PID = "((({col}) >> 24) & 16777215)"


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, Path]:
    """The fixtures unzipped: SQLite needs a real file."""
    folder = tmp_path_factory.mktemp("nsys")
    paths = {}
    for name in UPSTREAM_BLOBS:
        paths[name] = folder / name.removesuffix(".gz")
        paths[name].write_bytes(gzip.decompress((FIXTURES / name).read_bytes()))
    return paths


def _query(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute(sql).fetchall()


def _undocumented(metrics) -> list[str]:
    return [n for n in metrics.values if not describe(n) and n not in nsys_sqlite.METRIC_DOCS]


def test_fixtures_are_the_upstream_files_byte_for_byte(exports):
    cited = (FIXTURES / "nsys_exports.md").read_text()
    for name, blob in UPSTREAM_BLOBS.items():
        data = exports[name].read_bytes()
        assert data.startswith(b"SQLite format 3\x00")
        git_blob_id = hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()
        assert git_blob_id == blob and blob in cited and name in cited


# --- nsys 2022.2, A100: five NVTX-windowed iterations, runtime calls stored twice -------------

def test_saxpy_ranges_are_the_iterations(exports):
    path = exports[SAXPY]
    m = extract(path, nvtx_range="saxpy")
    ranges = _query(path, "SELECT start, end FROM NVTX_EVENTS WHERE text = 'saxpy'")
    kernels = _query(path, "SELECT k.start, k.end, r.start, r.end FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                           "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId) WHERE r.eventClass = 0")
    assert len(ranges) == 5 and len(kernels) == 5
    v = m.values
    assert v["iterations"] == 5 and v["window.whole_capture"] == 0
    assert v["kernels.per_iter"] == 1
    assert v["cpu.time_per_iter_us"] == pytest.approx(statistics.median(e - s for s, e in ranges) / 1e3)
    assert v["gpu.time_per_iter_us"] == pytest.approx(sum(e - s for s, e, _, _ in kernels) / 5 / 1e3)
    # From the runtime call itself, not from its "CUDA backtrace" twin that starts ~0.3 µs earlier.
    assert v["launch.latency_us_median"] == pytest.approx(statistics.median(k - r for k, _, r, _ in kernels) / 1e3)
    assert v["launch.api_us_per_iter"] == pytest.approx(sum(e - s for _, _, s, e in kernels) / 5 / 1e3)
    # The ranges hold only the launch: the copies before and after each one are outside the window.
    assert v["memcpy.h2d_bytes_per_iter"] == 0 and v["sync.calls_per_iter"] == 0
    [kernel] = m.kernels
    assert kernel["name"] == "saxpy" and kernel["count"] == 5 and kernel["category"] == "other"
    assert m.profiler == "nsys" and m.device == "cuda" and not _undocumented(m)


def test_saxpy_whole_capture_counts_each_call_once(exports):
    m = extract(exports[SAXPY], nvtx_range=None)
    v = m.values
    assert v["iterations"] == 1 and v["window.whole_capture"] == 1 and "cpu.time_per_iter_us" not in v
    assert v["kernels.per_iter"] == 5
    assert v["memcpy.h2d_bytes_per_iter"] == 10 * 262_144_000
    assert v["memcpy.d2h_bytes_per_iter"] == 5 * 262_144_000
    assert v["memcpy.pageable_per_iter"] == 15
    assert v["sync.calls_per_iter"] == 15  # every cudaMemcpy waits; 30 if the backtrace twins counted
    names = {k["name"]: k["count"] for k in m.kernels}
    # Spelled as PyTorch's traces spell them, though this export has no ENUM tables to read.
    assert names == {"saxpy": 5, "Memcpy HtoD (Pageable -> Device)": 10, "Memcpy DtoH (Device -> Pageable)": 5}


def test_no_matching_range_falls_back_to_the_whole_capture_and_says_so(exports):
    fallback = extract(exports[SAXPY])  # the default range, infprof.iter, is not in this export
    assert fallback.values == extract(exports[SAXPY], nvtx_range=None).values
    assert fallback.values["window.whole_capture"] == 1


# --- nsys 2025.1, H200: PyTorch + nvFuser, two processes, driver-API launches -------------------

def test_nvfuser_fusion_runs_are_the_iterations(exports):
    path = exports[NVFUSER]
    m = extract(path, nvtx_range=FUSION_RUN)
    ranges = _query(path, f"SELECT n.start, n.end FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
                          f"WHERE coalesce(n.text, s.value) = '{FUSION_RUN}'")
    inside = " OR ".join(f"r.start BETWEEN {s} AND {e}" for s, e in ranges)
    launched = _query(path, f"""
        SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
             AND {PID.format(col="r.globalTid")} = {PID.format(col="k.globalPid")}
        JOIN StringIds s ON s.id = k.shortName WHERE {inside}""")
    v = m.values
    assert v["iterations"] == len(ranges) == 2
    assert v["kernels.per_iter"] == len(launched) / 2 == 4
    assert v["gpu.time_per_iter_us"] == pytest.approx(sum(d for _, d in launched) / 2 / 1e3)
    assert v["cpu.time_per_iter_us"] == pytest.approx(statistics.median(e - s for s, e in ranges) / 1e3)
    # nvFuser's kernels go through cuLaunchKernel(Ex), the driver API: they count as launches too.
    assert sum(k["count"] for k in m.kernels if k["name"].startswith("nvfuser_")) == 6
    assert not any(k["category"] == "gemm" for k in m.kernels)  # the cuBLAS GEMMs ran outside both runs
    assert not _undocumented(m)


def test_nvfuser_whole_capture(exports):
    path = exports[NVFUSER]
    m = extract(path, nvtx_range=None)
    v = m.values
    [(kernel_count,)] = _query(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    [(gemm_ns,)] = _query(path, "SELECT sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                "JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nvjet%'")
    [(h2d_bytes,)] = _query(path, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1")
    assert v["kernels.per_iter"] == kernel_count == 18
    assert v["kernels.category.gemm.us_per_iter"] == pytest.approx(gemm_ns / 1e3)
    assert v["memcpy.h2d_bytes_per_iter"] == h2d_bytes == 394_002_434
    assert v["memcpy.pageable_per_iter"] == 2 and v["memcpy.d2h_bytes_per_iter"] == 0
    # Two cudaStreamSynchronize and one cudaDeviceSynchronize (CUPTI types the first as a "stream wait").
    assert v["sync.calls_per_iter"] == 3
    shares = [value for name, value in v.items() if name.endswith(".share")]
    assert sum(shares) == pytest.approx(1.0)
    rows = {k["name"]: k for k in m.kernels}
    assert rows["Memset (Device)"]["count"] == 3 and rows["Memset (Device)"]["category"] == "memset"
    assert rows["Memcpy DtoD (Device -> Device)"]["category"] == "memcpy"
    # nsys writes `<unnamed>::`; PyTorch's traces `(anonymous namespace)::`, which display_name drops.
    assert not any("<unnamed>" in k["full_name"] for k in m.kernels)
    assert rows["at::native::distribution_elementwise_grid_stride_kernel"]["category"] == "elementwise"
    assert rows["at::native::nll_loss_backward_reduce_cuda_kernel_2d"]["category"] == "reduction"


# --- nsys 2025.1.3: an export without kernel, copy, set or NVTX tables --------------------------

def test_missing_tables_are_none_of_that_thing(exports):
    assert not _query(exports[NO_KERNELS], "SELECT name FROM sqlite_master WHERE name IN "
                                           "('CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_MEMCPY', 'NVTX_EVENTS')")
    m = extract(exports[NO_KERNELS])
    v = m.values
    assert m.kernels == [] and v["window.whole_capture"] == 1
    assert v["kernels.per_iter"] == v["gpu.time_per_iter_us"] == v["memcpy.h2d_bytes_per_iter"] == 0
    assert v["gpu.busy_fraction"] == 0 and "launch.latency_us_median" not in v


# --- files that are not an nsys export --------------------------------------------------------

def test_what_is_not_an_export_gets_a_clear_error(tmp_path):
    with pytest.raises(TutorError, match="no Nsight Systems export"):
        extract(tmp_path / "missing.sqlite")
    text = tmp_path / "trace.json"
    text.write_text('{"traceEvents": []}')
    with pytest.raises(TutorError, match="not an SQLite database") as info:
        extract(text)
    assert "nsys export --type sqlite" in info.value.advice
    other = tmp_path / "progress.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE attempts (puzzle TEXT, tier TEXT)")
    with pytest.raises(TutorError, match="not an Nsight Systems export"):
        extract(other)


def test_the_export_is_only_read(exports):
    before = hashlib.sha256(exports[NVFUSER].read_bytes()).hexdigest()
    extract(exports[NVFUSER], nvtx_range=FUSION_RUN)
    assert hashlib.sha256(exports[NVFUSER].read_bytes()).hexdigest() == before


# --- synthetic shape tests: tables built here, not real data -----------------------------------

def _synthetic_export(path: Path, kernel_columns: str = "start, end, correlationId, globalPid, demangledName, "
                                                         "shortName, graphNodeId") -> None:
    """SYNTHETIC, for shapes no public export has: a CUDA graph replayed once per iteration.

    Process 100 runs two `infprof.iter` ranges (one nests another of the same name) after an
    `infprof.warmup`; process 200 launches a kernel in the same instants, with the same
    correlation id as process 100's graph launch.
    """
    main, other = 100 << 24, 200 << 24
    strings = {1: "infprof.iter", 2: "infprof.warmup", 3: "cudaGraphLaunch_v10000", 4: "cudaStreamSynchronize_v3020",
               5: "cudaLaunchKernel_v7000", 6: "void <unnamed>::fused_gemm_kernel<float>(float *)",
               7: "fused_gemm_kernel", 8: "other_process_kernel"}
    nvtx = [(0, 900_000, 59, 2, main + 1), (1_000_000, 2_000_000, 59, 1, main + 1),
            (1_100_000, 1_200_000, 59, 1, main + 1), (3_000_000, 4_000_000, 59, 1, main + 1)]
    runtime, kernels, corr = [], [], 10
    for start in (100_000, 1_050_000, 3_050_000):  # the warm-up's replay, then one per iteration
        runtime += [(start, start + 20_000, 0, main + 1, corr, 3), (start + 400_000, start + 800_000, 0, main + 1,
                                                                    corr + 1, 4)]
        kernels += [(start + 30_000 + 100_000 * i, start + 120_000 + 100_000 * i, corr, main, 6, 7, i)
                    for i in range(3)]
        corr += 10
    runtime.append((1_060_000, 1_070_000, 0, other + 1, 20, 5))  # correlation 20 again, in process 200
    kernels.append((1_080_000, 1_500_000, 20, other, 8, 8, None))
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        db.executemany("INSERT INTO StringIds VALUES (?, ?)", strings.items())
        db.execute("CREATE TABLE NVTX_EVENTS (start, end, eventType, textId, globalTid)")
        db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?)", nvtx)
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId)")
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?)", runtime)
        db.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({kernel_columns})")
        if "start" in kernel_columns:
            db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?)", kernels)


def test_synthetic_graph_replays_are_windowed_per_process(tmp_path):
    path = tmp_path / "synthetic.sqlite"
    _synthetic_export(path)
    m = extract(path)
    v = m.values
    assert v["iterations"] == 2  # the nested range is part of the first iteration
    assert v["graphs.replays_per_iter"] == 1 and v["graphs.kernels_per_iter"] == 3
    assert v["kernels.per_iter"] == 3  # not process 200's kernel, though its correlation id matches
    assert v["sync.calls_per_iter"] == 1
    assert v["launch.latency_us_median"] == pytest.approx(30.0)
    assert v["cpu.time_per_iter_us"] == pytest.approx(1000.0)
    assert v["memcpy.h2d_bytes_per_iter"] == 0  # no MEMCPY table at all
    [kernel] = m.kernels
    assert kernel["name"] == "fused_gemm_kernel" and kernel["category"] == "gemm" and kernel["count"] == 6


def test_synthetic_table_without_times_is_an_unknown_layout(tmp_path):
    path = tmp_path / "synthetic.sqlite"
    _synthetic_export(path, kernel_columns="begin_ns, end_ns")
    with pytest.raises(TutorError, match="CUPTI_ACTIVITY_KIND_KERNEL has no start/end"):
        extract(path)


def test_synthetic_export_without_process_ids_joins_on_correlation_alone(tmp_path):
    path = tmp_path / "synthetic.sqlite"
    _synthetic_export(path)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN globalPid")
    v = extract(path).values
    # The graph's kernels are still found; process 200's kernel, sharing an id, can no longer be told apart.
    assert v["graphs.kernels_per_iter"] == 3 and v["kernels.per_iter"] == 3.5


# --- the nsys command lines ---------------------------------------------------------------------

def test_profile_and_export_commands(tmp_path):
    request = tmp_path / "request.json"
    command = nsys_run.harness_command("/opt/nsys", tmp_path, "/venv/bin/python", request)
    assert command == ["/opt/nsys", "profile", "--trace=cuda,nvtx,osrt", "--cuda-graph-trace=node", "--sample=none",
                       "--output", str(tmp_path / "profile"), "--force-overwrite", "true",
                       "/venv/bin/python", "-m", "tutor.harness", str(request)]
    assert command[:9] == nsys_run.profile_command("/opt/nsys", tmp_path)
    assert nsys_run.export_command("/opt/nsys", tmp_path) == [
        "/opt/nsys", "export", "--type", "sqlite", "--output", str(tmp_path / "profile.sqlite"),
        "--force-overwrite", "true", str(tmp_path / "profile.nsys-rep")]


def _executable(path: Path, script: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_nsys_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(nsys_run, "SEARCH", (str(tmp_path / "opt/nsight-systems/*/bin/nsys"),))
    with pytest.raises(EnvironmentProblem, match="not installed") as info:
        nsys_run.find_nsys()
    assert "https://developer.nvidia.com/nsight-systems" in info.value.advice
    assert "apt install nsight-systems-cli" in info.value.advice
    for version in ("2024.5.1", "2024.10.1", "2023.4.4"):
        _executable(tmp_path / f"opt/nsight-systems/{version}/bin/nsys")
    assert nsys_run.find_nsys() == str(tmp_path / "opt/nsight-systems/2024.10.1/bin/nsys")
    on_path = _executable(tmp_path / "bin/nsys")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert nsys_run.find_nsys() == str(on_path)


def test_export_runs_nsys_and_reports_its_failure(tmp_path, exports):
    # A stand-in for nsys that "exports" by copying a real export to the --output it is given.
    stand_in = _executable(tmp_path / "nsys", f'#!/bin/sh\n[ "$4" = --output ] && cp "{exports[SAXPY]}" "$5"\n')
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with pytest.raises(TutorError, match="wrote no report"):
        nsys_run.export_sqlite(str(stand_in), run_dir)
    nsys_run.report_path(run_dir).write_bytes(b"")
    exported = nsys_run.export_sqlite(str(stand_in), run_dir)
    assert exported == run_dir / "profile.sqlite"
    assert extract(exported, nvtx_range="saxpy").values["iterations"] == 5
    failing = _executable(tmp_path / "broken/nsys", "#!/bin/sh\necho 'Importer error: bad report' >&2\nexit 1\n")
    os.remove(exported)
    with pytest.raises(TutorError, match="could not export") as info:
        nsys_run.export_sqlite(str(failing), run_dir)
    assert "Importer error" in info.value.output_tail

