# A test double, named as one: Ansible's local connection, made to behave like a connection that
# cannot send a command's standard input (has_pipelining false, as winrm or some network
# connections). It lets the tests take the path rdma.node.evaluate uses on such connections to write
# node_health's metrics (a transferred file instead of standard input), on this machine.

from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.plugins.connection import local

DOCUMENTATION = local.DOCUMENTATION.replace("name: local", "name: rdma_test_no_stdin", 1)


class Connection(local.Connection):

    transport = "rdma_test_no_stdin"
    has_pipelining = False

    def exec_command(self, cmd, in_data=None, sudoable=True):
        if in_data:
            raise AnsibleError("rdma_test_no_stdin cannot send standard input to a command")
        return super().exec_command(cmd, in_data=None, sudoable=sudoable)
