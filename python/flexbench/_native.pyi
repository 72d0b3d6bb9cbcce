"""Type stubs of the native module (crates/python/src/lib.rs): the stages as the command line
runs them; the Python side (flexbench/__init__.py) wraps them and returns DataFrames."""

from typing import List, Optional, Sequence, Tuple

__version__: str
#: A stage's record in its folder (process, fem, compare, overlay, report).
SUMMARY: str
#: The identification's record in its folder.
IDENTIFY_RECORD: str
#: The comparison with a measured table, in the compare stage's folder.
MEASURED_RECORD: str

Columns = List[Tuple[str, str, list]]
Outcome = Tuple[str, bool, float, str]
RunOutcome = Tuple[str, str, str, str, List[Outcome], List[str]]

def read_tracks(
    path: str,
    unit: Optional[str] = None,
    fps: Optional[float] = None,
    markers: Optional[Sequence[str]] = None,
    calibration: Optional[str] = None,
) -> Columns: ...
def smooth(tracks: str, out: str, settings_json: str, mechanism: Optional[str] = None) -> List[str]: ...
def process(
    tracks: str, mechanism: str, out: str, settings_json: str, flags: Optional[str] = None
) -> Tuple[List[str], List[str]]: ...
def fem(
    bodies: str,
    forces: str,
    mechanism: str,
    out: str,
    settings_json: str,
    measured: Optional[str] = None,
) -> Tuple[List[str], List[str]]: ...
def compare(
    processed: str,
    mechanism: str,
    out: str,
    settings_json: str,
    measured: Optional[str] = None,
) -> Tuple[List[str], List[str]]: ...
def identify(
    processed: str,
    mechanism: str,
    out: str,
    settings_json: str,
    measured: Optional[str] = None,
) -> Tuple[List[str], List[str]]: ...
def simulate(
    mechanism: str,
    out: str,
    duration: float = 2.0,
    rate: float = 1000.0,
    settle: float = 3.0,
    rtol: float = 1e-10,
) -> List[str]: ...
def check(mechanism: str) -> str: ...
def run(
    pipeline: str,
    out: Optional[str] = None,
    recordings: Sequence[str] = (),
    jobs: Optional[int] = None,
) -> Tuple[bool, List[Tuple[str, Optional[RunOutcome], Optional[str]]], List[str]]: ...
def threads() -> int: ...
def processed_table(folder: str, table: str) -> str: ...

class FlexbenchError(Exception): ...
class InputError(FlexbenchError): ...
class TableError(FlexbenchError): ...
class ContractError(FlexbenchError): ...
class MechanismError(FlexbenchError): ...
class KinematicsError(FlexbenchError): ...
class SignalError(FlexbenchError): ...
class VisionError(FlexbenchError): ...
class FemError(FlexbenchError): ...
class CompareError(FlexbenchError): ...
class IdentifyError(FlexbenchError): ...
class ReportError(FlexbenchError): ...
class OutputError(FlexbenchError): ...
