/* list.h: the algorithms, one line each. COLL_ALGORITHM(ID, name) names the enum value
 * COLL_ALGO_<ID> (sched.h) and the descriptor coll_algo_<name>, which src/coll/algo/<name>.c
 * defines: its builders, its constraints and its cost (algo.h, coll_algo_desc). Adding an
 * algorithm is that file and a line here (docs/CONTRIBUTING.md, "Adding a collective
 * algorithm").
 *
 * The order is the selector's order of preference when costs tie: roughly, the least scratch
 * memory first. No include guard: each includer defines COLL_ALGORITHM first.
 */
COLL_ALGORITHM(RING, ring)
COLL_ALGORITHM(PAIRWISE, pairwise)
COLL_ALGORITHM(RHD, rhd)
COLL_ALGORITHM(TREE, tree)
COLL_ALGORITHM(RD, rd)
COLL_ALGORITHM(BRUCK, bruck)
COLL_ALGORITHM(DIRECT, direct)
COLL_ALGORITHM(HIER, hier)
COLL_ALGORITHM(PAIR, pair)
