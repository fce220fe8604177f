#!/usr/bin/env python3
"""The table scripts/xfstests prints: one row per test, one column per target (pass, FAIL,
not run; stopped or not reached when a run hit its time limit), read from each target's xunit
report (RESULTS/TARGET/result.xml) and what check printed (for a test stopped mid-run); then the counts,
and the tests that fail on DocFS and pass on bindfs.

    xfstests-table.py RESULTS TARGET [TARGET ...]
"""
import os
import re
import sys
import xml.etree.ElementTree as ElementTree


def outcomes_from_output(folder):
    """What check printed (check.out), for a run stopped before it wrote its report: each test's
    line says pass (its seconds), not run, or a failure; one with nothing after it was running."""
    found = {}
    path = os.path.join(folder, "check.out")
    if not os.path.exists(path):
        return found
    for line in open(path, errors="replace"):
        match = re.match(r"^(generic/\d+)\s+(.*)$", line.rstrip("\n"))
        if not match:
            continue
        name, rest = match.groups()
        if rest.startswith("[not run]"):
            found[name] = ("not run", "")
        elif "output mismatch" in rest or rest.startswith("[failed") or rest.startswith("- "):
            found[name] = ("FAIL", "")
        elif re.match(r"^\d+s", rest):
            found[name] = ("pass", rest.split("s")[0])
        else:
            found[name] = ("stopped", "")
    return found


def outcomes(folder):
    """test name -> (outcome, seconds) for one target's run."""
    report = os.path.join(folder, "result.xml")
    # check adds each test to its report as it ends: a test running when the run was stopped is
    # only in its printed output.
    found = outcomes_from_output(folder)
    if not os.path.exists(report):
        return found
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "FAIL"
        elif case.find("skipped") is not None:
            outcome = "not run"
        else:
            outcome = "pass"
        found[case.get("name")] = (outcome, case.get("time", ""))
    return found


def main():
    results, targets = sys.argv[1], sys.argv[2:]
    runs = {target: outcomes(os.path.join(results, target)) for target in targets}
    names = sorted(set().union(*[run.keys() for run in runs.values()]))
    print("| test | " + " | ".join(targets) + " |")
    print("|---|" + "---|" * len(targets))
    for name in names:
        cells = [runs[target].get(name, ("not reached", ""))[0] for target in targets]
        # A test no target could run says nothing of DocFS: left out of the rows, counted below.
        if all(cell == "not run" for cell in cells):
            continue
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    for target in targets:
        counted = {}
        for outcome, _ in runs[target].values():
            counted[outcome] = counted.get(outcome, 0) + 1
        seconds_file = os.path.join(results, target, "seconds")
        seconds = open(seconds_file).read().strip() if os.path.exists(seconds_file) else "?"
        summary = ", ".join(f"{count} {outcome}" for outcome, count in sorted(counted.items()))
        print(f"{target}: {summary or 'no report'} ({seconds} s)")
    if "bindfs" in runs:
        for target in targets:
            if target == "bindfs":
                continue
            only = [name for name in names
                    if runs[target].get(name, ("",))[0] == "FAIL" and runs["bindfs"].get(name, ("",))[0] == "pass"]
            print(f"failing on {target} and passing on bindfs ({len(only)}): {' '.join(only) or 'none'}")


if __name__ == "__main__":
    main()
