"""Exhaustive structural checks of slotnet.schemes.broadcast.trees (Stamoulis & Tsitsiklis)."""

from __future__ import annotations

import itertools
import random
from collections import deque
from fractions import Fraction

import pytest

from slotnet.schemes.broadcast import _balanced
from slotnet.schemes.broadcast import trees as T


def _tree_arcs(d, children):
    """Arcs (parent_rel, child_rel) of a tree given by rel -> child dimensions, via BFS from 0."""
    seen, arcs, queue = {0}, [], deque([0])
    while queue:
        y = queue.popleft()
        for k in children(y):
            c = y ^ (1 << k)
            assert c not in seen, "node reached twice"
            seen.add(c)
            arcs.append((y, c))
            queue.append(c)
    assert seen == set(range(1 << d)), "not spanning"
    return arcs


def _ceil_k(d):
    return -(-((1 << d) - 1) // d)


# ------------------------------------------------------------------ §2.2.2


@pytest.mark.parametrize("d", range(1, 6))
def test_unbalanced_tree_is_shortest_path_in_given_order(d):
    """Every order gives a spanning tree whose paths cross the rel's dimensions in that order (§2.2.2)."""
    orders = list(itertools.permutations(range(d)))
    if len(orders) > 24:
        orders = random.Random(d).sample(orders, 24)
    for order in orders:
        arcs = _tree_arcs(d, lambda y, order=order: T.unbalanced_children(y, d, order))
        assert len(arcs) == (1 << d) - 1
        for p, c in arcs:
            k = (p ^ c).bit_length() - 1
            assert T.unbalanced_parent_dim(c, d, order) == k
        assert T.unbalanced_parent_dim(0, d, order) is None
        for y in range(1 << d):
            path, z = [], y
            while z:
                k = T.unbalanced_parent_dim(z, d, order)
                path.append(k)
                z ^= 1 << k
            assert len(path) == y.bit_count()  # depth = Hamming distance
            assert path[::-1] == [k for k in order if (y >> k) & 1]


@pytest.mark.parametrize("d", range(1, 8))
def test_unbalanced_subtree_sizes_and_leaves(d):
    """Subtree T_i has 2^(d-i) nodes and the tree has 2^(d-1) leaves (§2.2.2)."""
    order = tuple(range(d))
    sizes = [0] * (d + 1)
    for y in range(1, 1 << d):
        sizes[(y & -y).bit_length()] += 1  # first dimension crossed
    assert sizes[1:] == [1 << (d - i) for i in range(1, d + 1)]
    leaves = sum(1 for y in range(1 << d) if not T.unbalanced_children(y, d, order))
    assert leaves == 1 << (d - 1)


@pytest.mark.parametrize("d", range(2, 7))
def test_dtree_matches_general_order(d):
    """The j-th tree of §4.2.2 is the unbalanced tree of order j, j+1, ..., j-1."""
    for j in range(d):
        order = T.dtree_order(j, d)
        assert order == tuple((j + i) % d for i in range(d))
        for rel in range(1 << d):
            assert T.dtree_children(rel, j, d) == T.unbalanced_children(rel, d, order)
            assert T.dtree_parent_dim(rel, j, d) == T.unbalanced_parent_dim(rel, d, order)


@pytest.mark.parametrize("d", range(2, 8))
def test_section_4_1_increasing_tree_arc_load(d):
    """Arc (z^e_j, z) of the increasing tree serves exactly the origins x_m=z_m (m>j), x_j!=z_j (§4.1)."""
    order = tuple(range(d))
    z = 0  # by translation invariance
    for j in range(d):  # code dim j = paper's j+1
        users = {x for x in range(1 << d) if x and T.unbalanced_parent_dim(x ^ z, d, order) == j}
        paper = {x for x in range(1 << d) if (x >> (j + 1)) == (z >> (j + 1)) and (x ^ z) >> j & 1}
        assert users == paper
        assert len(users) == 1 << j  # paper prints 2^(d-j); its own condition gives 2^(j-1) (1-based)
    worst = max(1 << j for j in range(d))
    rho_max = Fraction((1 << d) - 1, d) / worst
    assert rho_max == Fraction(2, d) * (1 - Fraction(1, 1 << d))


@pytest.mark.parametrize("d", range(2, 7))
def test_appendix_a_crossing_probabilities(d):
    """Pr[Δ_m | Γ_l] = 2^((m-l) mod d)/2^d and g_{m,i} = (2^((m-i) mod d) - 1)/(2^d - 1) (App. A, (19))."""
    n = 1 << d
    x = 0
    uses = {}  # (tree, dim) -> origins whose tree-j broadcast crosses arc (x, x^e_dim)
    for j in range(d):
        for m in range(d):
            uses[j, m] = {y for y in range(n) if m in T.dtree_children(x ^ y, j, d)}
            assert len(uses[j, m]) == 1 << ((m - j) % d)
    for m in range(d):
        for i in range(d):
            # packets crossing arc (x^e_m, x), and among them those crossing (x, x^e_i)
            into = [(y, j) for j in range(d) for y in range(n) if T.dtree_parent_dim(x ^ y, j, d) == m]
            both = [(y, j) for y, j in into if i in T.dtree_children(x ^ y, j, d)]
            assert len(into) == n - 1
            assert Fraction(len(both), len(into)) == Fraction((1 << ((m - i) % d)) - 1, n - 1)


# ------------------------------------------------------------------ §4.2.2


def _check_periodic(d, period, sends, tree_children_of):
    """Simulate one period of a translated-tree schedule: causal, complete, each packet once per node."""
    n = 1 << d
    have = {}  # (origin, tree) -> set of nodes holding it
    links = set()
    for s in range(period):
        got = []
        for x in range(n):
            dims_used = set()
            for origin, tree, k in sends(x, s):
                assert k not in dims_used, "two packets on one directed link in one slot"
                dims_used.add(k)
                assert (s, x, k) not in links
                links.add((s, x, k))
                holders = have.setdefault((origin, tree), {origin})
                assert x in holders, "sent before received"
                assert k in tree_children_of(x ^ origin, tree)
                got.append(((origin, tree), x ^ (1 << k)))
        for key, y in got:
            assert y not in have[key], "received twice"
            have[key].add(y)
    return have


@pytest.mark.parametrize("d", range(2, 7))
def test_dtree_schedule_conflict_free_and_complete(d):
    """§4.2.2: period 2^d-1, one packet per directed link per slot, every node gets every (origin, tree) once."""
    n, period = 1 << d, T.dtree_period(d)
    assert period == n - 1

    def sends(x, s):
        return [(o, j, k) for k, (o, j) in enumerate(T.dtree_sends(x, s, d))]

    have = _check_periodic(d, period, sends, lambda rel, j: T.dtree_children(rel, j, d))
    assert len(have) == n * d and all(len(v) == n for v in have.values())
    # every link is busy in every slot: d * 2^d * (2^d - 1) transmissions
    table = T.periodic_schedule(d)
    assert table.shape == (period, n, d, 2)
    for s in range(period):
        for x in range(n):
            assert [tuple(v) for v in table[s, x]] == list(T.dtree_sends(x, s, d))


@pytest.mark.parametrize("d", range(2, 7))
def test_dtree_crossing_slot_agrees_with_sends(d):
    """dtree_crossing_slot is the slot in which dtree_sends puts that packet on that link."""
    n = 1 << d
    for j in range(d):
        for rel in range(n):
            for k in range(d):
                s = T.dtree_crossing_slot(rel, j, k, d)
                if k not in T.dtree_children(rel, j, d):
                    assert s is None
                    continue
                origin = (rel * 37 + j) % n  # any origin; the schedule is translation invariant
                x = origin ^ rel
                assert T.dtree_sends(x, s, d)[k] == (origin, j)
                parent = T.dtree_parent_dim(rel, j, d)
                if parent is not None:
                    assert T.dtree_crossing_slot(rel ^ (1 << parent), j, parent, d) < s


# ------------------------------------------------------------------ §4.3.1 labels


def _periodic_queue_labels(taus, period):
    """Brute force: FIFO served at period starts (l-1)P by a packet available by then."""
    labels, queue, i, start = [], deque(), 0, 0
    while len(labels) < len(taus):
        while i < len(taus) and taus[i] <= start:
            queue.append(i)
            i += 1
        if queue:
            queue.popleft()
            labels.append(start // period + 1)
        start += period
    return labels


def test_label_recursion_matches_periodic_queue():
    """l_1 = ⌈τ_1/P⌉+1, l_{n+1} = max{l_n+1, ⌈τ_{n+1}/P⌉+1} is the period of service (§4.3.1)."""
    rng = random.Random(1)
    for period in (2, 3, 7, 11):
        for _ in range(50):
            taus = sorted(rng.randrange(0, 60) for _ in range(rng.randrange(1, 25)))
            assert T.label_sequence(taus, period) == _periodic_queue_labels(taus, period)
    assert T.first_label(0, 7) == 1 and T.first_label(1, 7) == 2 and T.first_label(7, 7) == 2
    assert T.first_label(7.5, 7) == 3 and T.first_label(Fraction(15, 2), 7) == 3
    assert T.next_label(5, 3, 7) == 6 and T.next_label(1, 30, 7) == 6
    assert T.period_start_slot(3, 7) == 14


def _nonidling_vs_periodic(d, rng, slots, rate, scheme):
    """Non-idling run with label priority; return (non-idling, periodic) receive slots per (packet, node)."""
    n = 1 << d
    if scheme == "dtree":
        period = T.dtree_period(d)
        kids = lambda rel, j: T.dtree_children(rel, j, d)
        parent = lambda rel, j: T.dtree_parent_dim(rel, j, d)
        key = lambda lab, rel, j, k: T.dtree_priority(lab, rel, j, k, d)
        slot_of = lambda rel, j, k: T.dtree_crossing_slot(rel, j, k, d)
    else:
        period = T.balanced_period(d)
        kids = lambda rel, j: T.balanced_children(rel, d)
        parent = lambda rel, j: T.balanced_parent_dim(rel, d)
        key = lambda lab, rel, j, k: T.balanced_priority(lab, rel, k, d)
        slot_of = lambda rel, j, k: T.balanced_crossing_slot(rel, k, d)
    last_label = {}
    packets = []  # (origin, tree, label, gen_slot)
    for t in range(slots):
        for o in range(n):
            for _ in range(int(rng.random() < rate) + int(rng.random() < rate / 4)):
                j = rng.randrange(d) if scheme == "dtree" else 0
                stream = (o, j)
                lab = (T.first_label(t + 1, period) if stream not in last_label
                       else T.next_label(last_label[stream], t + 1, period))
                last_label[stream] = lab
                packets.append((o, j, lab, t))
    # periodic receive slots
    periodic = {}
    for pid, (o, j, lab, _) in enumerate(packets):
        for rel in range(1, n):
            k = parent(rel, j)
            par = rel ^ (1 << k)
            periodic[pid, o ^ rel] = T.period_start_slot(lab, period) + slot_of(par, j, k)
    # non-idling simulation
    pending = {x: {} for x in range(n)}  # node -> pid -> [ready_slot, remaining dims]
    by_gen = {}
    for pid, p in enumerate(packets):
        by_gen.setdefault(p[3], []).append(pid)
    got, t = {}, 0
    while len(got) < len(packets) * (n - 1):
        for pid in by_gen.get(t - 1, []):
            o, j = packets[pid][:2]
            pending[o][pid] = [t, set(kids(0, j))]
        arrivals = []
        for x in range(n):
            for k in range(d):
                best = None
                for pid, (ready, rem) in pending[x].items():
                    if ready <= t and k in rem:
                        o, j, lab, _ = packets[pid]
                        cand = (key(lab, x ^ o, j, k), pid)
                        best = cand if best is None or cand < best else best
                if best is not None:
                    pid = best[1]
                    pending[x][pid][1].discard(k)
                    arrivals.append((pid, x ^ (1 << k)))
        for x in range(n):
            pending[x] = {p: v for p, v in pending[x].items() if v[1]}
        for pid, y in arrivals:
            assert (pid, y) not in got
            got[pid, y] = t
            o, j = packets[pid][:2]
            rem = set(kids(y ^ o, j))
            if rem:
                pending[y][pid] = [t + 1, rem]
        t += 1
        assert t < slots * 50, "non-idling simulation did not drain"
    return got, periodic


@pytest.mark.parametrize("scheme", ["dtree", "balanced"])
def test_label_priority_never_later_than_periodic(scheme):
    """With (label, periodic slot) priority every packet reaches every node no later than periodically (§4.3.1)."""
    d = 4
    rate = 0.9 * (d / ((1 << d) - 1)) if scheme == "dtree" else 0.9 / T.balanced_period(d)
    got, periodic = _nonidling_vs_periodic(d, random.Random(7), 120, rate, scheme)
    assert got.keys() == periodic.keys() and len(got) > 1000
    late = [(k, got[k], periodic[k]) for k in got if got[k] > periodic[k]]
    assert not late, late[:5]
    assert sum(periodic[k] - got[k] for k in got) > 0  # non-idling actually gains


# ------------------------------------------------------------------ §4.3.1 balanced tree


@pytest.mark.parametrize("d", range(2, 11))
def test_balanced_tree_shortest_path_and_balanced(d):
    """Balanced prototype: spanning, depth = Hamming weight, <= ⌈(2^d-1)/d⌉ arcs per dimension, period K."""
    arcs = _tree_arcs(d, lambda y: T.balanced_children(y, d))
    for p, c in arcs:
        k = (p ^ c).bit_length() - 1
        assert (c >> k) & 1 and T.balanced_parent_dim(c, d) == k  # arc goes up one weight level
    assert T.balanced_parent_dim(0, d) is None
    counts = T.balanced_dimension_counts(d)
    assert sum(counts) == (1 << d) - 1
    assert max(counts) <= _ceil_k(d)
    assert T.balanced_period(d) == _ceil_k(d)  # optimal length of §4.2.1


@pytest.mark.parametrize("d", range(2, 7))
def test_balanced_schedule_conflict_free_and_complete(d):
    """Translations of the balanced tree with its slots form a conflict-free multinode broadcast."""
    n, period = 1 << d, T.balanced_period(d)

    def sends(x, s):
        return [(o, 0, k) for o, k in T.balanced_sends(x, s, d)]

    have = _check_periodic(d, period, sends, lambda rel, _: T.balanced_children(rel, d))
    assert len(have) == n and all(len(v) == n for v in have.values())
    table = T.balanced_schedule(d)
    for s in range(period):
        for x in range(n):
            row = [(int(o), k) for k, o in enumerate(table[s, x]) if o >= 0]
            assert row == list(T.balanced_sends(x, s, d))
    for rel in range(n):
        for k in range(d):
            s = T.balanced_crossing_slot(rel, k, d)
            assert (s is None) == (k not in T.balanced_children(rel, d))


@pytest.mark.parametrize("d", range(2, 9))
def test_balanced_flow_fallback(d):
    """The max-flow assignment fallback is a shortest-path tree within the per-dimension bound."""
    dims = _balanced._flow_parent_dims(d)
    counts = [0] * d
    for y in range(1, 1 << d):
        assert (y >> dims[y]) & 1
        counts[dims[y]] += 1
    assert max(counts) <= _ceil_k(d)
    slots = _balanced._list_schedule(d, dims)
    for y in range(1, 1 << d):
        p = y ^ (1 << dims[y])
        assert p == 0 or slots[p] < slots[y]
    per = {(slots[y], dims[y]) for y in range(1, 1 << d)}
    assert len(per) == (1 << d) - 1  # distinct slots within each dimension


# ------------------------------------------------------------------ §5.1 ESBT


def _esbt_arcs(d, j):
    root = T.esbt_root(j, d)
    return {(root ^ p, root ^ c) for p, c in _tree_arcs(d, lambda y: T.esbt_children(y, j, d))}


@pytest.mark.parametrize("d", range(2, 9))
def test_esbt_spanning_rooted_and_arc_disjoint(d):
    """The d trees are spanning, rooted at e_j with order j+1..d,1..j, pairwise arc-disjoint (§5.1)."""
    n = 1 << d
    all_arcs = set()
    for j in range(d):
        assert T.esbt_root(j, d) == 1 << j
        assert T.esbt_parent_dim(0, j, d) is None
        assert T.esbt_order(j, d) == tuple((j + 1 + i) % d for i in range(d))
        arcs = _esbt_arcs(d, j)
        assert len(arcs) == n - 1
        assert not arcs & all_arcs, "trees share a directed arc"
        all_arcs |= arcs
        # node 0 is the root's child across dimension j, and a leaf
        assert (1 << j, 0) in arcs and T.esbt_children(1 << j, j, d) == ()
        for rel in range(n):  # depth = Hamming distance from the root
            depth, y = 0, rel
            while y:
                y ^= 1 << T.esbt_parent_dim(y, j, d)
                depth += 1
            assert depth == rel.bit_count()
    every = {(z, z ^ (1 << i)) for z in range(n) for i in range(d)}
    assert every - all_arcs == {(0, 1 << i) for i in range(d)}  # Rule C remark


@pytest.mark.parametrize("d", range(2, 9))
def test_esbt_paper_facts(d):
    """T_1^(j) hangs from e_j^e_{j+1} with 2^(d-1) nodes; e_j is a leaf of T^(j+1) under e_j^e_{j+1} (§5.5.1)."""
    n = 1 << d
    for j in range(d):
        nxt = (j + 1) % d
        e_j, e_n = 1 << j, 1 << nxt
        assert T.esbt_parent_dim((e_j ^ e_n) ^ e_j, j, d) == nxt  # child of the root across j+1
        t1 = [y for y in range(n) if T.esbt_subtree(y ^ e_j, j, d) == 1]
        assert len(t1) == n >> 1
        assert sum(T.root_buffer(y, j, d) == 1 for y in range(n)) == n >> 1  # B1 and B2 get halves
        assert T.root_buffer(e_j, j, d) == 2
        assert T.esbt_parent_dim(e_j ^ e_n, nxt, d) == nxt and T.esbt_children(e_j ^ e_n, nxt, d) == ()
        assert sum(1 for rel in range(n) if T.esbt_children(rel, j, d)) == n >> 1  # 2^(d-1) non-leaves
        for i in range(1, d + 1):
            assert sum(T.esbt_subtree(rel, j, d) == i for rel in range(n)) == 1 << (d - i)


@pytest.mark.parametrize("d", range(2, 8))
def test_port_plan_partitions_ports(d):
    """Per node, each port serves one tree per slot class; up ports biject onto non-rooted trees (Rule C)."""
    n = 1 << d
    for z in range(n):
        plan = T.port_plan(z, d)
        for i, (down, up) in enumerate(plan):
            assert (down is None) == (z == 0)
            assert (up is None) == (z == 1 << i)
            if down is not None:
                assert i in T.down_ports(z, down, d)
            if up is not None:
                assert T.up_port(z, up, d) == i
                assert up != down
        for j in range(d):
            assert (T.up_port(z, j, d) is None) == (z == 1 << j)
            assert T.down_ports(z, j, d) == tuple(i for i in T.esbt_order(j, d) if plan[i][0] == j)
        ups = [u for _, u in plan if u is not None]
        assert sorted(ups) == [j for j in range(d) if z != 1 << j]


# ------------------------------------------------------------------ §5.2 rules


def test_slot_classes_and_broadcast_times():
    """C_c = {t mod 3 = c}; a broadcast takes ⌈d/2⌉+d-1 from C1, ⌊d/2⌋+d from C2; V = 3d/2 - 1/2 (Prop. 5)."""
    assert [T.slot_class(t) for t in range(6)] == [T.SlotClass.C0, T.SlotClass.C1, T.SlotClass.C2] * 2
    assert [T.next_c0_slot(t) for t in range(5)] == [0, 3, 3, 3, 6]
    assert [T.next_broadcast_slot(t) for t in range(5)] == [1, 1, 2, 4, 4]
    for d in range(1, 12):
        for start in (1, 2, 4, 5):
            hops = T.broadcast_hop_slots(start, d)
            assert all(h % 3 for h in hops) and list(hops) == sorted(set(hops))
        c1 = T.broadcast_hop_slots(4, d)[-1] - 4 + 1
        c2 = T.broadcast_hop_slots(5, d)[-1] - 5 + 1
        assert c1 == -(-d // 2) + d - 1 and c2 == d // 2 + d
        assert Fraction(c1 + c2, 2) == Fraction(3 * d, 2) - Fraction(1, 2)
    with pytest.raises(ValueError):
        T.broadcast_hop_slots(3, 4)


@pytest.mark.parametrize("d", range(2, 8))
def test_virtual_arcs_rules_d_and_d_prime(d):
    """Rule D makes every root-bound path d arcs long; Rule D′ leaves 1 (0 at distance d) (§5.5.2, Cor. 8)."""
    n = 1 << d
    for j in range(d):
        tot = 0
        for y in range(n):
            k = (y ^ (1 << j)).bit_count()
            assert T.virtual_arcs(y, j, d, "D") + k == d
            assert T.virtual_arcs(y, j, d, "D'") == (0 if k == d else 1)
            tot += T.virtual_arcs(y, j, d, "D'")
        assert Fraction(tot, n) == 1 - Fraction(1, n)
        assert Fraction(sum(T.virtual_arcs(y, j, d) for y in range(n)), n) == Fraction(d, 2)


def test_rule_f_start_slots():
    """Rule F: two packets use t+1 and t+2 in coin order; a lone packet starts at t+1+coin."""
    assert T.rule_f_start_slots(6, True, True, 0) == (7, 8)
    assert T.rule_f_start_slots(6, True, True, 1) == (8, 7)
    assert T.rule_f_start_slots(6, True, False, 1) == (8, None)
    assert T.rule_f_start_slots(6, False, True, 0) == (None, 7)
    assert T.rule_f_start_slots(6, False, False, 0) == (None, None)
    with pytest.raises(ValueError):
        T.rule_f_start_slots(7, True, True, 0)


@pytest.mark.parametrize("d", range(2, 7))
def test_reoriented_broadcast_spans_without_redundancy(d):
    """Non-idling §5.6: T^(j) re-rooted at the origin reaches all nodes once, using k reversed arcs."""
    n = 1 << d
    for j in range(d):
        tree = _esbt_arcs(d, j)
        for y in range(n):
            seen, queue, used = {y}, deque([y]), []
            while queue:
                z = queue.popleft()
                for i in T.reoriented_ports(z, y, j, d):
                    w = z ^ (1 << i)
                    assert w not in seen
                    seen.add(w)
                    used.append((z, w))
                    queue.append(w)
            assert len(seen) == n and len(used) == n - 1
            reversed_ = [a for a in used if a not in tree]
            assert all((w, z) in tree for z, w in reversed_)
            assert len(reversed_) == (y ^ (1 << j)).bit_count()


def _simulate_rules(d, rule, slots, rate, seed):
    """Literal implementation of the module's 'Rules A-F in local terms'; returns per-packet records."""
    rng = random.Random(seed)
    n = 1 << d
    plan = [T.port_plan(z, d) for z in range(n)]
    V = [[deque() for _ in range(d)] for _ in range(n)]  # own packets before their virtual arcs
    tandem = []  # (slot of last virtual crossing, node, pid)
    U = [[deque() for _ in range(d)] for _ in range(n)]  # root-bound FIFOs of (pid, eligible slot)
    L = [[deque(), deque()] for _ in range(d)]  # per root: L1, L2
    B = [[None, None] for _ in range(d)]  # per root: B1, B2
    starts = [[] for _ in range(d)]  # per root: (start slot, pid) fixed by Rule F
    H = [[None] * d for _ in range(n)]  # held broadcast per tree: (pid, send slot)
    packets, recv, c0 = [], {}, {}
    for t in range(slots):
        links = set()

        def send(z, i, links=links):
            assert (z, i) not in links, "two packets on one port in one slot"
            links.add((z, i))

        if T.slot_class(t) == T.SlotClass.C0:
            for z in range(n):  # Rule D / D'
                for j in range(d):
                    if V[z][j]:
                        pid = V[z][j].popleft()
                        v = T.virtual_arcs(z, j, d, rule)
                        c0[pid] += v
                        tandem.append((t + 3 * (v - 1), z, pid))
            moves = []
            for z in range(n):  # Rules B, C
                for i, (_, m) in enumerate(plan[z]):
                    if m is not None and U[z][m] and U[z][m][0][1] <= t:
                        pid, _ = U[z][m].popleft()
                        send(z, i)
                        moves.append((i, z ^ (1 << i), m, pid))
            for j in range(d):  # Rule E
                for b in (0, 1):
                    if L[j][b] and L[j][b][0][1] <= t:
                        assert B[j][b] is None
                        B[j][b] = L[j][b].popleft()[0]
                        c0[B[j][b]] += 1
            for _, w, m, pid in sorted(moves):  # same-slot arrivals by incoming port
                c0[pid] += 1
                if w == 1 << m:
                    L[m][T.root_buffer(packets[pid][0], m, d) - 1].append((pid, t + 3))
                else:
                    U[w][m].append((pid, t + 3))
            for _, z, pid in [x for x in tandem if x[0] == t]:  # own packets last
                j = packets[pid][1]
                (L[j][1] if z == 1 << j else U[z][j]).append((pid, t + 3))
            tandem = [x for x in tandem if x[0] != t]
            for j in range(d):  # Rule F
                s1, s2 = T.rule_f_start_slots(t, B[j][0] is not None, B[j][1] is not None, rng.randrange(2))
                for b, s in ((0, s1), (1, s2)):
                    if s is not None:
                        starts[j].append((s, B[j][b]))
                        B[j][b] = None
        else:
            arrivals = []
            for j in range(d):  # Rule F: a start is a send on all ports of the root
                for _s, pid in [x for x in starts[j] if x[0] == t]:
                    for i in T.down_ports(1 << j, j, d):
                        send(1 << j, i)
                        arrivals.append((1 << i ^ 1 << j, j, pid))
                starts[j] = [x for x in starts[j] if x[0] != t]
            for z in range(n):  # Rule C
                for j in range(d):
                    h = H[z][j]
                    if h is not None and h[1] == t:
                        for i in T.down_ports(z, j, d):
                            assert plan[z][i][0] == j
                            send(z, i)
                            arrivals.append((z ^ (1 << i), j, h[0]))
                        H[z][j] = None
            for w, j, pid in arrivals:
                assert H[w][j] is None, "two broadcasts of one tree held at a node"
                assert w not in recv.setdefault(pid, {})
                recv[pid][w] = t
                if T.down_ports(w, j, d):
                    H[w][j] = (pid, T.next_broadcast_slot(t + 1))
        for z in range(n):  # Rule A: generation during slot t, eligible from t + 1
            if rng.random() < rate and t < slots - 15 * d:
                j = rng.randrange(d)
                pid = len(packets)
                packets.append((z, j, t))
                c0[pid] = 0
                if T.virtual_arcs(z, j, d, rule):
                    V[z][j].append(pid)
                else:
                    U[z][j].append((pid, t + 1))
    return packets, recv, c0


@pytest.mark.parametrize("rule", ["D", "D'"])
def test_rules_a_to_f_executable(rule):
    """The local Rules A-F text, executed literally for d=3, is conflict-free and completes every broadcast."""
    d = 3
    packets, recv, c0 = _simulate_rules(d, rule, 240, 0.08, seed=3)
    assert len(packets) > 50
    for pid, (y, j, _) in enumerate(packets):
        assert set(recv[pid]) == set(range(1 << d)) - {1 << j}  # every node but the root, once
        k = (y ^ (1 << j)).bit_count()
        assert c0[pid] == T.virtual_arcs(y, j, d, rule) + k + 1  # virtual + actual + l1/l2
