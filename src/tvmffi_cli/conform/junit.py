"""JUnit XML of a conformance report: one testcase per (check, function).

Only blocking findings (severity error, not suppressed) are <failure> or
<error> elements, so a CI test-report never shows red for a run that exits 0.
Warnings are written as a `warning` property and in <system-out>; suppressed
findings are <skipped> with the configured reason.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from .. import text
from .callargs import words
from .results import ERROR, FAIL, SKIP, Report, Result


def _case(suite: ET.Element, cls: str, r: Result) -> None:
    where = r.function if r.function is not None else "(library)"
    case = ET.SubElement(suite, "testcase", classname=f"{cls}.{where}", name=r.check)
    text = f"{r.title}\n{r.message}" + (f"\nreproduce: {r.reproduce}" if r.reproduce else "")
    d = r.details or {}
    args, steps = d.get("args"), d.get("steps")
    if r.bad and isinstance(args, list):
        first = steps[0] if isinstance(steps, list) and steps else "the call"
        text += f"\narguments of {first}: {words([a for a in args if isinstance(a, dict)])}"
    if r.bad:
        text += f"\nfix: {r.fix}"
    if r.output:
        text += f"\nlibrary output:\n{r.output}"
    if r.suppressed is not None and r.bad:
        ET.SubElement(case, "skipped", message=f"suppressed: {r.suppressed}")
        out = ET.SubElement(case, "system-out")
        out.text = f"{r.status} (suppressed: {r.suppressed})\n{text}"
    elif r.blocking and r.status == FAIL:
        el = ET.SubElement(case, "failure", message=r.message, type=r.severity)
        el.text = text
    elif r.blocking and r.status == ERROR:
        el = ET.SubElement(case, "error", message=r.message, type="error")
        el.text = text
    elif r.bad:  # a warning: visible, never a failure
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", name="warning", value=r.message)
        if r.reproduce:
            ET.SubElement(props, "property", name="reproduce", value=r.reproduce)
        out = ET.SubElement(case, "system-out")
        out.text = f"warning: {text}"
    elif r.status == SKIP:
        ET.SubElement(case, "skipped", message=r.message)


def suite(report: Report) -> ET.Element:
    """The <testsuite> of one library's report."""
    lib = Path(report.path).name
    # Dots in a classname mean packages to JUnit viewers: keep the file name one level.
    cls = lib.replace(".", "_")
    suite = ET.Element("testsuite", name=f"tvmffi conform {lib}")
    suite.set("tests", str(len(report.results)))
    suite.set("failures", str(sum(r.blocking and r.status == FAIL for r in report.results)))
    suite.set("errors", str(sum(r.blocking and r.status == ERROR for r in report.results)))
    suite.set(
        "skipped",
        str(sum(r.status == SKIP or (r.bad and r.suppressed is not None) for r in report.results)),
    )
    if report.elapsed is not None:
        suite.set("time", f"{report.elapsed:.3f}")
    for r in report.results:
        _case(suite, cls, r)
    out = ET.SubElement(suite, "system-out")
    out.text = report.summary_line()
    return suite


def to_xml(report: Report) -> str:
    return suites_xml([suite(report)])


def suites_xml(suites: list[ET.Element]) -> str:
    root = ET.Element("testsuites")
    root.extend(suites)
    # Library text may hold characters XML 1.0 cannot: make them visible escapes.
    return text.xml(ET.tostring(root, encoding="unicode", xml_declaration=False))


def write_xml(xml: str, path: str) -> None:
    from ..errors import InputError

    doc = '<?xml version="1.0" encoding="UTF-8"?>\n' + xml + "\n"
    try:
        Path(path).write_text(doc, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write JUnit XML to {path}: {e.strerror}") from None


def write(report: Report, path: str) -> None:
    write_xml(to_xml(report), path)
