"""JUnit XML of a conformance report: one testcase per (check, function)."""

import xml.etree.ElementTree as ET
from pathlib import Path

from .results import ERROR, FAIL, SKIP


def to_xml(report):
    lib = Path(report.path).name
    # Dots in a classname mean packages to JUnit viewers: keep the file name one level.
    cls = lib.replace(".", "_")
    suite = ET.Element("testsuite", name=f"tvmffi conform {lib}")
    counts = report.counts()
    suite.set("tests", str(len(report.results)))
    suite.set("failures", str(counts[FAIL]))
    suite.set("errors", str(counts[ERROR]))
    suite.set("skipped", str(counts[SKIP]))
    if report.elapsed is not None:
        suite.set("time", f"{report.elapsed:.3f}")
    for r in report.results:
        where = r.function if r.function is not None else "(library)"
        case = ET.SubElement(suite, "testcase", classname=f"{cls}.{where}", name=r.check)
        if r.status == FAIL:
            el = ET.SubElement(case, "failure", message=r.message, type=r.severity)
            el.text = f"{r.title}\n{r.message}"
        elif r.status == ERROR:
            el = ET.SubElement(case, "error", message=r.message, type="error")
            el.text = r.message
        elif r.status == SKIP:
            ET.SubElement(case, "skipped", message=r.message)
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=False)


def write(report, path):
    from ..errors import InputError

    text = '<?xml version="1.0" encoding="UTF-8"?>\n' + to_xml(report) + "\n"
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write JUnit XML to {path}: {e.strerror}") from None
