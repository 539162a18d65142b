"""A diagnosis: what every rule found in one profile, ranked by what is at stake, and what the profile cannot tell."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tutor.diagnose.rules import ROOFLINE_PCT, RULES, Finding, Profile

@dataclass
class Diagnosis:
    findings: list[Finding]  # ranked, the first the most at stake
    unclear: list[str] = field(default_factory=list)  # what this profile cannot tell apart, and what would

    @property
    def ranked(self) -> list[str]:
        return [f.bottleneck for f in self.findings]

    def to_dict(self) -> dict:
        return asdict(self)


def diagnose(profile: Profile) -> Diagnosis:
    found = [f for f in (rule(profile) for rule in RULES) if f is not None]
    return Diagnosis(rank(found), unclear(profile, found))


def rank(found: list[Finding]) -> list[Finding]:
    """By share at stake; a finer class just above the coarser one it explains (a transpose's scattered loads
    above the bytes they move), whatever their shares."""
    ranked = sorted(found, key=lambda f: -f.share)
    for finer in [f for f in ranked if f.refines]:
        coarse = next((i for i, f in enumerate(ranked) if f.bottleneck == finer.refines), None)
        if coarse is not None and ranked.index(finer) > coarse:
            ranked.remove(finer)
            ranked.insert(coarse, finer)
    return ranked


def unclear(profile: Profile, found: list[Finding]) -> list[str]:
    names = {f.bottleneck for f in found}
    notes = []
    if profile.on_gpu and not profile.has("ncu.") and profile.get("gpu.busy_fraction") >= 0.5:
        notes.append("The GPU is busy, and what its kernels do inside is Nsight Compute's to say: spills, bank "
                     "conflicts, scattered accesses, divergence, occupancy, tails, L2 misses and idle tensor cores "
                     "look alike from here. Run it again with --kernels.")
    dram = profile.get("ncu.dram_throughput_pct")
    if dram >= ROOFLINE_PCT:
        notes.append(f"The profiled kernels move bytes at {dram:.0f}% of DRAM's bandwidth, near its roof: nothing in "
                     "how they move them is left to find, and only moving fewer bytes makes them faster. Are all of "
                     "those bytes needed (ncu.dram_bytes against the data the call reads and writes)?")
    if {"cpu_overhead", "launch_overhead"} <= names:
        notes.append("Both the host's own work and the launches keep the GPU waiting: the trace's host row (with "
                     "Python stacks: the torch profiler's with_stack) says which of the two to cut first.")
    if "dequantization_overhead" in names:
        notes.append("Elementwise kernels that convert dtypes beside matmuls look the same whether they expand "
                     "quantized weights or cast activations: their inputs' dtypes, in the trace's kernel names, "
                     "tell which.")
    reserved, used = profile.get("memory.reserved_mb"), profile.get("memory.peak_allocated_mb")
    if profile.on_gpu and not profile.has("allocator.") and used > 0 and reserved > 1.5 * used:
        notes.append(f"The allocator reserves {reserved:.0f} MB for {used:.0f} MB of tensors: the memory profile "
                     "(--profiler memory on a puzzle) says whether that is fragmentation.")
    return notes
