"""JUnit XML of `conform` over a wheel: one <testsuite> per library (as for
one library), and one for the wheel itself holding declared-runtime."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from ..conform import junit
from ..conform.results import Report
from .engine import BundleResult


def to_xml(res: BundleResult) -> str:
    suites = []
    for o in res.outcomes:
        if o.report is not None:
            suites.append(junit.suite(o.report))
        elif o.error is not None:  # the library could not be checked at all
            s = ET.Element("testsuite", name=f"tvmffi conform {o.library}")
            s.set("tests", "1")
            s.set("failures", "0")
            s.set("errors", "1")
            case = ET.SubElement(s, "testcase", classname=o.member, name="input")
            ET.SubElement(case, "error", message=o.error, type="error").text = o.error
            suites.append(s)
    if res.checks:
        name = os.path.basename(res.bundle.source.rstrip(os.sep))
        suites.append(junit.suite(Report(name, list(res.checks), [], res.elapsed)))
    return junit.suites_xml(suites)


def write(res: BundleResult, path: str) -> None:
    junit.write_xml(to_xml(res), path)
