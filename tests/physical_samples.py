"""Outputs in the shape of tools that cannot run here, for the physical-layer tests.

``mlxlink`` needs an NVIDIA adapter and MFT: its JSON is built in the shape its source writes it
(mstflint, mlxlink/modules/printutil/mlxlink_cmd_print.cpp ``toJsonFormat``: ``result.output`` with
one object per section, text values, per-lane values as ``{"values": [...]}``, and ``status``),
with the field names and value forms of mlxlink_commander.cpp. The real outputs that are public
(tests/fixtures/link_quality) are read beside it.
"""

from __future__ import annotations

import json


def mlxlink_json(effective="15E-255", raw="1E-9", rx_los=("0", "0", "0", "0"), temperature="48 [-5..75]", code=0, message="success"):
    """Output in the shape of mlxlink --json (mstflint's toJsonFormat); values as a ConnectX-7 OSFP prints them."""
    return json.dumps({"result": {"output": {
        "Operational Info": {"State": "Active", "Physical state": "LinkUp", "Speed": "IB-NDR", "Width": "4x", "FEC": "Standard_RS-FEC - (544,514)"},
        "Troubleshooting Info": {"Status Opcode": "0", "Group Opcode": "N/A", "Recommendation": "No issue was observed"},
        "Physical Counters and BER Info": {"Time Since Last Clear [Min]": "5632.5", "Effective Physical Errors": "0",
                                           "Effective Physical BER": effective, "Raw Physical Errors Per Lane": {"values": ["3", "0", "12", "0"]},
                                           "Raw Physical BER": raw, "Link Down Counter": "1", "Link Error Recovery Counter": "0"},
        "Module Info": {"Identifier": "OSFP", "Vendor Name": "NVIDIA", "Vendor Part Number": "MMA4Z00-NS", "Vendor Serial Number": "MT2301FT0000",
                        "Temperature [C]": temperature, "Voltage [mV]": "3273.6 [2970..3630]",
                        "Rx Power Current [dBm]": "0,2,-9,0 [-8..6]", "Rx LOS [per lane]": {"values": list(rx_los)},
                        "Tx Fault [per lane]": {"values": ["0", "0", "0", "0"]}}}},
        "status": {"code": code, "message": message}}, indent=3)
