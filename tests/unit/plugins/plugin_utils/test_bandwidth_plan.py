"""The bandwidth_check plan: ports, pairing by rounds, TCP ports, GID choice, verdicts, job processes.

Facts come from the demo hosts' sysfs trees (built by tools/sysfs_tree.py and read by the real
sysfs reader), GID tables from the real grep over those trees, perftest results from the real
captured outputs in tests/fixtures/perftest parsed by the perftest module's own parser, and process
listings as ps prints them (tests/integration/test_node_tools_for_real.py reads the real ps).
"""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils._bandwidth_plan import (
    BandwidthPlanError,
    build_plan,
    expected_gbps,
    job_processes,
    match_ports,
    pair_rounds,
    pairs_as_lists,
    parse_gid_table,
    roce_v2_gid_index,
    round_robin,
    select_ports,
    step_roles,
    verdicts,
)
from bandwidth_demo import DEMO_HOSTS, demo_hosts, demo_plan, perftest_result
from testpaths import FIXTURES


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return demo_hosts(tmp_path_factory.mktemp("demo"))


# ------------------------------------------------------------------------------------- pairing


def test_two_hosts_one_round():
    assert pairs_as_lists(pair_rounds(["n1", "n2"])) == [{"pairs": [["n1", "n2"]], "sitting_out": []}]


def test_three_hosts_two_rounds_the_one_sitting_out_is_paired_next():
    assert pairs_as_lists(pair_rounds(["n1", "n2", "n3"])) == [
        {"pairs": [["n2", "n3"]], "sitting_out": ["n1"]},
        {"pairs": [["n3", "n1"]], "sitting_out": ["n2"]},
    ]


def test_four_hosts_one_round_every_host_once():
    assert pairs_as_lists(pair_rounds(["n1", "n2", "n3", "n4"])) == [
        {"pairs": [["n1", "n4"], ["n2", "n3"]], "sitting_out": []},
    ]


def test_four_hosts_full_round_robin():
    assert pairs_as_lists(pair_rounds(["n1", "n2", "n3", "n4"], "all")) == [
        {"pairs": [["n1", "n4"], ["n2", "n3"]], "sitting_out": []},
        {"pairs": [["n3", "n1"], ["n2", "n4"]], "sitting_out": []},
        {"pairs": [["n1", "n2"], ["n3", "n4"]], "sitting_out": []},
    ]


def test_three_hosts_full_round_robin_and_a_number_of_rounds():
    full = pairs_as_lists(pair_rounds(["n1", "n2", "n3"], "all"))
    assert full == [
        {"pairs": [["n2", "n3"]], "sitting_out": ["n1"]},
        {"pairs": [["n3", "n1"]], "sitting_out": ["n2"]},
        {"pairs": [["n1", "n2"]], "sitting_out": ["n3"]},
    ]
    assert pairs_as_lists(pair_rounds(["n1", "n2", "n3"], 1)) == full[:1]
    assert pairs_as_lists(pair_rounds(["n1", "n2", "n3"], "7")) == full


def test_one_host_has_no_round():
    assert pair_rounds(["n1"]) == []
    assert pair_rounds([]) == []


@pytest.mark.parametrize("count", range(2, 12))
def test_round_robin_properties(count):
    hosts = ["h%02d" % i for i in range(count)]
    schedule = round_robin(hosts)
    assert len(schedule) == (count - 1 if count % 2 == 0 else count)
    met = []
    for entry in schedule:
        seen = [h for pair in entry["pairs"] for h in pair] + entry["sitting_out"]
        assert sorted(seen) == hosts  # every host exactly once per round: in one pair or sitting out
        assert len(entry["sitting_out"]) == count % 2
        met.extend(frozenset(pair) for pair in entry["pairs"])
    assert sorted(met, key=sorted) == sorted((frozenset(p) for p in itertools.combinations(hosts, 2)), key=sorted)  # once each
    covered = set(h for entry in pair_rounds(hosts) for pair in entry["pairs"] for h in pair)
    assert covered == set(hosts)  # "cover" tests every host
    servers = [pair[0] for entry in schedule for pair in entry["pairs"]]
    if count > 2:
        assert len(set(servers)) > 1  # the server side alternates


@pytest.mark.parametrize("rounds, message", [
    ("some", "bandwidth_check_pair_rounds: expected 'cover', 'all' or a number of rounds of 1 or more, got 'some'"),
    (0, "bandwidth_check_pair_rounds: expected 'cover', 'all' or a number of rounds of 1 or more, got 0"),
    (True, "bandwidth_check_pair_rounds: expected 'cover', 'all' or a number of rounds of 1 or more, got True"),
])
def test_bad_rounds(rounds, message):
    with pytest.raises(BandwidthPlanError) as error:
        pair_rounds(["n1", "n2"], rounds)
    assert str(error.value) == message


def test_duplicate_hosts_rejected():
    with pytest.raises(BandwidthPlanError, match="must be distinct"):
        round_robin(["n1", "n1"])


# ------------------------------------------------------------------------------------- ports


def test_demo_ports_and_expected_rates(demo):
    # With host memory a port must reach 0.95 of its link rate by default (Azure's floors for EDR and HDR).
    v100 = select_ports(demo["v100-node-01"]["ports"])
    assert [(p["name"], p["rate_gbps"], p["expected_gbps"], p["memory"]) for p in v100["ports"]] == [
        ("mlx5_0/1", 100.0, 95.0, "host"), ("mlx5_1/1", 100.0, 95.0, "host")]
    faulty = select_ports(demo["v100-node-02"]["ports"])
    assert [p["name"] for p in faulty["ports"]] == ["mlx5_0/1"]
    assert faulty["skipped"] == [{"name": "mlx5_1/1", "state": "DOWN", "reason": "state DOWN, not ACTIVE"}]
    a100 = select_ports(demo["a100-node-01"]["ports"], gid_tables=demo["a100-node-01"]["gid_tables"], efficiency=0.9)
    assert [(p["name"], p["link_layer"], p["expected_gbps"], p["gid_index"], p["gid_source"]) for p in a100["ports"]] == [
        ("mlx5_1/1", "InfiniBand", 180.0, None, "none"),
        # The bond's RoCE v2 GIDs are 1 and 3 on bond0; both IPv4-mapped: the lower index.
        ("mlx5_bond_0/1", "Ethernet", 9.0, 1, "sysfs"),
    ]


@pytest.mark.parametrize("host, mode, expected", [
    # V100 nodes: peer memory ready (nvidia_peermem), both GPUs behind the HCA's switch: GPU 0 (0000:5f:00.0).
    ("v100-node-01", "auto", [("mlx5_0/1", "cuda", 0, False, 0, 90.0), ("mlx5_1/1", "cuda", 0, False, 0, 90.0)]),
    # a100-node-02: one GPU behind each HCA's switch: mlx5_1 gets GPU 1 (0000:4e:00.0); the bond sits on NUMA node 1
    # and its nearest GPU is across the NUMA nodes.
    ("a100-node-02", "dmabuf", [("mlx5_1/1", "dmabuf", 1, True, 0, 180.0), ("mlx5_bond_0/1", "dmabuf", 0, True, 1, 9.0)]),
    # a100-node-01 has no GPUDirect path (nvidia_peermem not loaded, the proprietary module): auto stays in host memory.
    ("a100-node-01", "auto", [("mlx5_1/1", "host", None, False, 0, 190.0), ("mlx5_bond_0/1", "host", None, False, 1, 9.5)]),
])
def test_the_memory_of_each_port_test(demo, host, mode, expected):
    chosen = select_ports(demo[host]["ports"], gid_tables=demo[host]["gid_tables"], gpu_mode=mode, rdma=demo[host]["rdma"])
    assert [(p["name"], p["memory"], p["cuda_index"], p["dmabuf"], p["numa_node"], p["expected_gbps"]) for p in chosen["ports"]] == expected
    assert (chosen["efficiency"], chosen["efficiency_gpu"]) == (0.95, 0.9)


def test_why_a_gpu_mode_is_what_it_is(demo):
    a100 = select_ports(demo["a100-node-01"]["ports"], gpu_mode="auto", rdma=demo["a100-node-01"]["rdma"])["ports"][0]
    assert a100["memory_reason"] == ("no GPUDirect path is ready (the NVIDIA kernel module is proprietary, DMA-BUF needs the open one; "
                                     "neither nvidia_peermem nor nv_peer_mem is loaded): host memory")
    # Asked for, DMA-BUF runs where the facts say it is not ready: the run is the proof, the reason is said.
    forced = select_ports(demo["v100-node-01"]["ports"], gpu_mode="dmabuf", rdma=demo["v100-node-01"]["rdma"])["ports"][0]
    assert (forced["memory"], forced["memory_reason"]) == (
        "dmabuf", "the facts say DMA-BUF is not ready: the NVIDIA kernel module is proprietary, DMA-BUF needs the open one")
    assert forced["gpu"] == {"pci_address": "0000:5f:00.0", "cuda_index": 0, "relation": "same_pcie_switch", "numa_node": 0}
    # Without locality facts: the first GPU, and said so.
    blind = select_ports(demo["v100-node-01"]["ports"], gpu_mode="cuda")["ports"][0]
    assert (blind["cuda_index"], blind["memory_reason"]) == (
        0, "no GPUDirect facts (rdma.gpudirect) for this node, so its readiness is not known; no GPU locality facts for mlx5_0 "
           "(rdma.locality): the first GPU (CUDA index 0) is used")


def test_bad_gpu_settings(demo):
    ports = demo["v100-node-01"]["ports"]
    with pytest.raises(BandwidthPlanError) as error:
        select_ports(ports, gpu_mode="gdr")
    assert str(error.value) == "bandwidth_check_gpu_mode: expected one of host, cuda, dmabuf, auto, got 'gdr'"
    with pytest.raises(BandwidthPlanError) as error:
        select_ports(ports, efficiency_gpu=0)
    assert str(error.value) == "bandwidth_check_efficiency_gpu: expected a number between 0 and 1 such as 0.9, got 0"


def test_port_filters(demo):
    ports = demo["a100-node-01"]["ports"]
    assert [p["name"] for p in select_ports(ports, link_layers=["InfiniBand"])["ports"]] == ["mlx5_1/1"]
    assert [p["name"] for p in select_ports(ports, only=["mlx5_bond_0/1"])["ports"]] == ["mlx5_bond_0/1"]
    chosen = select_ports(ports, exclude=["mlx5_bond_0/1"])
    assert [p["name"] for p in chosen["ports"]] == ["mlx5_1/1"]
    assert {"name": "mlx5_bond_0/1", "state": "ACTIVE", "reason": "in bandwidth_check_exclude_ports"} in chosen["skipped"]


def test_gid_index_variable_when_sysfs_has_none(demo):
    ports = demo["a100-node-01"]["ports"]
    assert select_ports(ports, gid_index=3)["ports"][1][("gid_index")] == 3  # no table read: the variable
    assert select_ports(ports, gid_index=3)["ports"][1]["gid_source"] == "variable"
    assert select_ports(ports)["ports"][1]["gid_index"] is None


def test_gid_tables_from_loop_results(demo):
    text = demo["a100-node-01"]["gid_tables"]["mlx5_bond_0/1"]
    results = [{"item": {"device": "mlx5_bond_0", "port": 1}, "stdout": text, "rc": 0}]
    assert select_ports(demo["a100-node-01"]["ports"], gid_tables=results)["ports"][1]["gid_index"] == 1


def test_show_gids_rows_commented_out_and_two_hosts_pasted_together():
    commented = (FIXTURES / "cmd" / "pastes" / "show_gids_mitosis_readme_rows_commented_with_hash_ib_ports_v1.txt").read_text()
    assert parse_gid_table(commented, "mlx5_1/1") == {0: {"gid": "fe80:0000:0000:0000:ec0d:9a03:0078:6376", "type": "IB/RoCE v1", "ndev": None}}
    # The second host's rows of mlx5_bond_0/1 (on bond1) do not replace the first host's (on bond0): its index 3 exists.
    two = (FIXTURES / "cmd" / "pastes" / "show_gids_cn_note_two_hosts_one_block_mlx5_bond_0_on_bond0_then_bond1_hiroce.txt").read_text()
    table = parse_gid_table(two, "mlx5_bond_0/1")
    assert sorted(table) == [0, 1, 2, 3] and {entry["ndev"] for entry in table.values()} == {"bond0"}
    assert roce_v2_gid_index(table) == 3
    assert roce_v2_gid_index(parse_gid_table(two, "hrn3_bond_0/1")) == 1


def test_show_gids_rows_in_a_c_comment_are_rows():
    text = (FIXTURES / "cmd" / "pastes" / "show_gids_in_a_c_header_block_comment_star_marks_three_devices.txt").read_text()
    for port, netdev in (("mlx5_0/1", "eth05"), ("mlx5_1/1", "eth02"), ("mlx5_2/1", "eth03")):
        table = parse_gid_table(text, port)
        assert sorted(table) == [0, 1, 2, 3] and roce_v2_gid_index(table, [netdev]) == 3


def test_show_gids_rows_of_the_port_give_its_roce_v2_gid():
    text = (FIXTURES / "cmd" / "pastes" / "show_gids_pod_vf_net1_mlx5_3_v1_v2_ipv4_tabs_root_prompt.txt").read_text()
    table = parse_gid_table(text, "mlx5_3/1")
    assert sorted(table) == [0, 1, 2, 3]
    assert table[3] == {"gid": "0000:0000:0000:0000:0000:ffff:c0a8:0a02", "type": "RoCE v2", "ndev": "net1"}
    assert table[0]["type"] == "IB/RoCE v1"
    assert roce_v2_gid_index(table, ["net1"]) == 3  # the IPv4-mapped v2 GID before the link-local one (index 1)
    assert parse_gid_table(text, "mlx5_4/1") == {}  # show_gids lists every port: another port's rows are not this one's
    ports = [{"device": "mlx5_3", "port": 1, "state": "ACTIVE", "link_layer": "Ethernet", "netdevs": ["net1"], "rate_gbps": 100}]
    chosen = select_ports(ports, gid_tables={"mlx5_3/1": text})["ports"][0]
    assert (chosen["gid_index"], chosen["gid_source"]) == (3, "sysfs")


@pytest.mark.parametrize("efficiency, expected", [(0.9, 90.0), (0.96, 96.0), (1, 100.0)])
def test_expected_rate(efficiency, expected):
    assert expected_gbps(100.0, efficiency) == expected
    assert expected_gbps(None, efficiency) is None


@pytest.mark.parametrize("kwargs, message", [
    ({"efficiency": 1.5}, "bandwidth_check_efficiency: expected a number between 0 and 1 such as 0.9, got 1.5"),
    ({"efficiency": "fast"}, "bandwidth_check_efficiency: expected a number between 0 and 1 such as 0.9, got 'fast'"),
    ({"link_layers": ["IB"]}, "bandwidth_check_link_layers: expected InfiniBand or Ethernet, got 'IB'"),
    ({"only": ["mlx5_0"]}, "bandwidth_check_ports: expected ports written as DEVICE/PORT such as mlx5_0/1, got 'mlx5_0'"),
    ({"exclude": "mlx5_0/1"}, "bandwidth_check_exclude_ports: expected a list, got 'mlx5_0/1'"),
    ({"gid_index": -1}, "bandwidth_check_gid_index: expected a GID index (0 or more), got -1"),
])
def test_bad_port_options(demo, kwargs, message):
    with pytest.raises(BandwidthPlanError) as error:
        select_ports(demo["a100-node-01"]["ports"], **kwargs)
    assert str(error.value) == message


def test_gid_table_of_a_busy_port():
    """255 entries of which most are unused (all zero, types unreadable), two netdevs, IPv6 and v1 GIDs."""
    lines = []
    table = {
        0: ("fe80:0000:0000:0000:0e42:a1ff:fe65:3a9e", "IB/RoCE v1", "bond0"),
        1: ("fe80:0000:0000:0000:0e42:a1ff:fe65:3a9e", "RoCE v2", "bond0"),
        2: ("2001:0db8:0000:0000:0e42:a1ff:fe65:3a9e", "RoCE v2", "bond0"),
        3: ("0000:0000:0000:0000:0000:ffff:c0a8:0a01", "IB/RoCE v1", "bond0.100"),
        4: ("0000:0000:0000:0000:0000:ffff:c0a8:0a01", "RoCE v2", "bond0.100"),
        5: ("0000:0000:0000:0000:0000:ffff:0a00:0001", "IB/RoCE v1", "bond0"),
        6: ("0000:0000:0000:0000:0000:ffff:0a00:0001", "RoCE v2", "bond0"),
    }
    port = "/sys/class/infiniband/mlx5_bond_0/ports/1"
    for index in range(255):
        gid, kind, ndev = table.get(index, ("0000:0000:0000:0000:0000:0000:0000:0000", None, None))
        lines.append("%s/gids/%d:%s" % (port, index, gid))
        if kind:
            lines.append("%s/gid_attrs/types/%d:%s" % (port, index, kind))
            lines.append("%s/gid_attrs/ndevs/%d:%s" % (port, index, ndev))
    parsed = parse_gid_table("\n".join(lines) + "\n")
    assert sorted(parsed) == [0, 1, 2, 3, 4, 5, 6]
    assert roce_v2_gid_index(parsed, ["bond0"]) == 6  # IPv4-mapped first
    assert roce_v2_gid_index(parsed, ["bond0.100"]) == 4
    assert roce_v2_gid_index({i: e for i, e in parsed.items() if i != 6}, ["bond0"]) == 2  # then global
    assert roce_v2_gid_index({i: parsed[i] for i in (0, 1)}, ["bond0"]) == 1  # then link-local
    assert roce_v2_gid_index({i: parsed[i] for i in (0, 3, 5)}, ["bond0"]) is None  # RoCE v1 only
    assert roce_v2_gid_index(parsed, ["eth9"]) is None
    assert roce_v2_gid_index(parsed, []) == 4  # netdev unknown: any RoCE v2 GID
    assert parse_gid_table("") == {}


# ------------------------------------------------------------------------------------- plan


def test_demo_plan(demo):
    plan, dummy = demo_plan(demo)
    # Loopback: every ACTIVE port, one TCP port per host (the demo hosts share one machine).
    assert {h: [(p["name"], p["tcp_port"]) for p in plan["loopback"][h]] for h in DEMO_HOSTS} == {
        "v100-node-01": [("mlx5_0/1", 18515), ("mlx5_1/1", 18515)],
        "v100-node-02": [("mlx5_0/1", 18516)],
        "a100-node-01": [("mlx5_1/1", 18517), ("mlx5_bond_0/1", 18517)],
        "a100-node-02": [("mlx5_1/1", 18518), ("mlx5_bond_0/1", 18518)],
    }
    assert [(g["name"], g["rounds"]) for g in plan["groups"]] == [
        ("ib-a100", [{"pairs": [["a100-node-01", "a100-node-02"]], "sitting_out": []}]),
        ("ib-v100", [{"pairs": [["v100-node-01", "v100-node-02"]], "sitting_out": []}]),
    ]
    steps = [[(t["id"], t["tcp_port"], t["server_address"], t["expected_gbps"]) for t in s["tests"]] for s in plan["steps"]]
    assert steps == [
        [("a100-node-01:mlx5_1/1>a100-node-02:mlx5_1/1", 18515, "10.0.0.3", 180.0),
         # v100-node-02's mlx5_1 is down: only mlx5_0 pairs with mlx5_0.
         ("v100-node-01:mlx5_0/1>v100-node-02:mlx5_0/1", 18516, "10.0.0.1", 90.0)],
        [("a100-node-01:mlx5_bond_0/1>a100-node-02:mlx5_bond_0/1", 18515, "10.0.0.3", 9.0)],
    ]
    assert plan["steps"][1]["tests"][0]["server_port"]["gid_index"] == 1
    assert plan["notes"] == []
    for step in plan["steps"]:
        hosts = [h for t in step["tests"] for h in (t["server"], t["client"])]
        assert len(hosts) == len(set(hosts))  # a host takes part in one test per step
    assert step_roles(plan["steps"][0], "v100-node-02")["client"]["server"] == "v100-node-01"
    assert step_roles(plan["steps"][1], "v100-node-01") == {"serve": None, "client": None}


def test_three_hosts_of_a_group_and_one_alone(demo):
    ports = select_ports(demo["v100-node-01"]["ports"])["ports"]
    infos = {name: {"group": "ib-v100", "ports": ports} for name in ("n1", "n2", "n3")}
    infos["solo"] = {"group": "ib-h100", "ports": ports}
    plan = build_plan(infos, order=["n1", "n2", "n3", "solo"], tcp_port_base=20000)
    # Round 1: n2 serves n3 (n1 sits out), two ports each -> two steps; round 2: n3 serves n1.
    assert [[(t["round"], t["slot"], t["server"], t["client"], t["server_port"]["name"], t["tcp_port"]) for t in s["tests"]]
            for s in plan["steps"]] == [
        [(1, 1, "n2", "n3", "mlx5_0/1", 20000)],
        [(1, 2, "n2", "n3", "mlx5_1/1", 20000)],
        [(2, 1, "n3", "n1", "mlx5_0/1", 20000)],
        [(2, 2, "n3", "n1", "mlx5_1/1", 20000)],
    ]
    assert plan["notes"] == [{"hosts": ["solo"], "note": "solo is the only host of group ib-h100 to test: loopback only, no pair test."}]
    assert plan["loopback"]["solo"][0]["tcp_port"] == 20003
    assert plan["steps"][0]["tests"][0]["server_address"] == "n2"  # no address: the host name


def test_pairs_of_two_groups_share_a_step_with_distinct_tcp_ports(demo):
    ports = select_ports(demo["v100-node-01"]["ports"], only=["mlx5_0/1"])["ports"]
    infos = {name: {"group": name[0], "ports": ports} for name in ("a1", "a2", "a3", "a4", "b1", "b2")}
    plan = build_plan(infos)
    assert [[(t["server"], t["client"], t["tcp_port"]) for t in s["tests"]] for s in plan["steps"]] == [
        [("a1", "a4", 18515), ("a2", "a3", 18516), ("b1", "b2", 18517)],
    ]


def test_ports_are_matched_by_order_within_a_link_layer(demo):
    a100 = select_ports(demo["a100-node-01"]["ports"])["ports"]
    other = [dict(a100[0], name="mlx5_0/1", device="mlx5_0"), a100[1]]  # the other HCA cabled
    assert [(a["name"], b["name"]) for a, b in match_ports(a100, other)] == [
        ("mlx5_1/1", "mlx5_0/1"), ("mlx5_bond_0/1", "mlx5_bond_0/1")]
    ib_only = [p for p in a100 if p["link_layer"] == "InfiniBand"]
    eth_only = [p for p in a100 if p["link_layer"] == "Ethernet"]
    plan = build_plan({"x": {"group": "g", "ports": ib_only}, "y": {"group": "g", "ports": eth_only}})
    assert plan["steps"] == []
    assert plan["notes"] == [{"hosts": ["x", "y"], "note": "x and y (group g) have no ports of the same link layer: no pair test."}]


def test_host_without_ports_and_switches(demo):
    ports = select_ports(demo["v100-node-01"]["ports"])["ports"]
    infos = {"n1": {"group": "g", "ports": ports}, "n2": {"group": "g", "ports": ports}, "n3": {"group": "g", "ports": []}}
    plan = build_plan(infos, order=["n1", "n2", "n3"])
    assert plan["notes"] == [{"hosts": ["n3"], "note": "n3 has no ACTIVE port to test."}]
    assert [g["hosts"] for g in plan["groups"]] == [["n1", "n2"]]  # n3 is not paired
    no_pairs = build_plan(infos, pairs=False)
    assert no_pairs["steps"] == [] and no_pairs["groups"][0]["rounds"]  # still planned, not run
    no_loopback = build_plan(infos, loopback=False)
    assert no_loopback["loopback"] == {"n1": [], "n2": [], "n3": []} and no_loopback["steps"]


@pytest.mark.parametrize("kwargs, message", [
    ({"tcp_port_base": 65535}, "bandwidth_check_tcp_port_base: 65535 leaves no TCP port for the loopback test of n2 "
                               "(65536 is above 65535); choose a lower base"),
    ({"tcp_port_base": 0}, "bandwidth_check_tcp_port_base: expected a TCP port from 1 to 65535, got 0"),
    ({"tool": "ib_write_lat"}, "bandwidth_check_tool: expected one of ib_write_bw, ib_read_bw, ib_send_bw, got 'ib_write_lat'"),
])
def test_bad_plan_options(demo, kwargs, message):
    ports = select_ports(demo["v100-node-01"]["ports"])["ports"]
    with pytest.raises(BandwidthPlanError) as error:
        build_plan({"n1": {"group": "g", "ports": ports}, "n2": {"group": "g", "ports": ports}}, **kwargs)
    assert str(error.value) == message


# ------------------------------------------------------------------------------------- verdicts
# (the findings they give are tested with the checks, in test_checks_bandwidth.py)


def test_verdicts_of_a_host_whose_tests_ran(demo):
    plan, infos = demo_plan(demo, efficiency=0.96)
    loopback = [dict(perftest_result("seed_ib_write_bw_loopback_report_gbits_interleaved_mlx5_1_v100.txt"), item=entry)
                for entry in plan["loopback"]["v100-node-01"]]
    runs = [{"id": "v100-node-01:mlx5_0/1>v100-node-02:mlx5_0/1", "side": "server", "listening": True, "stopped_by": "role",
             "result": perftest_result("ib_write_bw_s1M_server_IB_MBsec.txt", size=1048576)}]
    judged = verdicts(plan, "v100-node-01", loopback, runs, selection=infos["v100-node-01"])
    assert [(t["status"]["port"], t["status"]["measured_gbps"], t["outcome"]) for t in judged["loopback"]] == [
        ("mlx5_0/1", 94.71, "below_expected"), ("mlx5_1/1", 94.71, "below_expected")]
    (pair,) = judged["pairs"]
    assert (pair["status"]["role"], pair["status"]["peer"], pair["status"]["measured_gbps"], pair["outcome"]) == (
        "server", "v100-node-02", 93.357573, "below_expected")
    assert (pair["server_record"]["stopped_by"], pair["status"]["server_stopped_by"]) == ("role", "role")
    assert (judged["group"], judged["efficiency"], judged["no_active_port"]) == ("ib-v100", 0.96, False)


def test_a_healthy_link_passes_with_gpu_memory_and_the_same_figure_fails_with_host_memory(demo):
    """The DMA-BUF run of NVIDIA's GPU Operator documentation (92.38 Gb/s at 64 KiB on a 100 Gb/s port) passes at
    0.90 of the link rate with GPU memory; the same figure with host memory is below 0.95 and fails."""
    for mode, outcome, expected in (("cuda", "pass", 90.0), ("host", "below_expected", 95.0)):
        plan, infos = demo_plan(demo, efficiency=0.95, gpu_mode=mode)
        loopback = [dict(perftest_result("ib_write_bw_use_cuda_dmabuf_a_roce_pod_client_rst_indented.txt"), item=entry)
                    for entry in plan["loopback"]["v100-node-01"]]
        judged = verdicts(plan, "v100-node-01", loopback, [], selection=infos["v100-node-01"])
        assert [(t["status"]["memory"], t["status"]["measured_gbps"], t["status"]["expected_gbps"], t["outcome"])
                for t in judged["loopback"]] == [(mode, 92.38, expected, outcome)] * 2
        assert (judged["efficiency"], judged["efficiency_gpu"]) == (0.95, 0.9)


def test_a_pair_with_gpu_memory_on_one_side_is_held_to_the_gpu_limit(demo):
    plan, infos = demo_plan(demo, efficiency=0.95, gpu_mode="auto")
    (test,) = [t for step in plan["steps"] for t in step["tests"] if t["group"] == "ib-a100" and t["link_layer"] == "InfiniBand"]
    # a100-node-01 serves in host memory (no GPUDirect path), a100-node-02 is its client with peer memory and GPU 1.
    assert (test["server_port"]["memory"], test["client_port"]["memory"], test["client_port"]["cuda_index"]) == ("host", "cuda", 1)
    assert test["expected_gbps"] == 180.0
    runs = [{"id": test["id"], "side": "server", "listening": True, "stopped_by": "self",
             "result": perftest_result("ib_write_bw_use_cuda_roce_rdma_cm_t4_pod_server.txt")},
            {"id": test["id"], "side": "client", "result": perftest_result("ib_write_bw_use_cuda_roce_rdma_cm_t4_pod_client.txt")}]
    (pair,) = [p for p in verdicts(plan, "a100-node-02", [], runs, selection=infos["a100-node-02"])["pairs"] if p["test"]["id"] == test["id"]]
    status = pair["status"]
    # The recorded run is a Tesla T4's 10.42 Gb/s on GPU 82:00: below 180, and not the GPU nearest mlx5_1.
    assert (status["memory"], status["peer_memory"], status["gpu"], status["gpu_used"], pair["outcome"]) == (
        "cuda", "host", "0000:4e:00.0", "82:00", "below_expected")


def test_verdicts_reject_what_is_not_a_plan():
    with pytest.raises(BandwidthPlanError, match="expected the plan of rdma.node.bandwidth_plan"):
        verdicts({"steps": []}, "n1")


# ------------------------------------------------------------------------------------- processes


def test_job_processes_needs_a_job():
    with pytest.raises(BandwidthPlanError):
        job_processes("1 1 sleep", "")
    assert job_processes("garbage\n  12 12 /usr/bin/timeout 5 x RDMA_NODE_BANDWIDTH_JOB=a\n", "a") == [
        {"pid": 12, "pgid": 12, "command": "/usr/bin/timeout", "deadline": True}]
