"""`infprof-tutor diagnose`: the bottleneck classes a profile of any workload supports, ranked by the time at stake.

evidence.py reads what the puzzles' profilers give (their metrics, and the host's time split out of a torch trace);
rules.py holds one rule per class of the taxonomy, each naming the numbers that show it; report.py ranks what the
rules found and says what they cannot tell apart; capture.py profiles a learner's own command.
"""
