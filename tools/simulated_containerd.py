# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The own containerd of a simulated demo node, from the checkout's root: runs the development collection
rdma.demo's ``scripts/simulated_containerd.py`` (the script the demo's remediation restarts nodes with).

Usage::

    python tools/simulated_containerd.py restart NODE_ROOT
    python tools/simulated_containerd.py stop NODE_ROOT
"""

import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "collections", "ansible_collections", "rdma", "demo",
                            "scripts", "simulated_containerd.py"), run_name="__main__")
