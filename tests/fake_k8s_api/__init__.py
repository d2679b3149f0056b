# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A FAKE Kubernetes API server for the k8s_rdma and k8s_quarantine tests (see server.py, maintenance.py); not Kubernetes."""
