// SPDX-License-Identifier: GPL-2.0
// An empty kernel module: rdma.node's molecule hosts build and install it with DKMS under the
// name mlnx-ofed-kernel, so that `dkms status` on those hosts is the real one.
#include <linux/module.h>

static int __init rdma_node_molecule_dummy_init(void)
{
	return 0;
}

static void __exit rdma_node_molecule_dummy_exit(void)
{
}

module_init(rdma_node_molecule_dummy_init);
module_exit(rdma_node_molecule_dummy_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rdma.node molecule stand-in for the MLNX_OFED DKMS package");
