"""The env file of scripts/openstack-up.sh: the one reader and writer.

`KEY=value` lines, no quoting (every value matches SAFE), `#` comments: readable by `.` in a
shell, by these functions, and by the Rust tests (crates/testkit, `StackEnv`).
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(REPO, 'target', 'openstack', 'env')
SAFE = re.compile(r'^[A-Za-z0-9_./:@+,=-]*$')


def path(given=None):
    """The env file to read: `given`, else $CCM_OPENSTACK_ENV, else target/openstack/env."""
    return given or os.environ.get('CCM_OPENSTACK_ENV') or DEFAULT


def read(file):
    """The KEY=value pairs of `file` as a dict; {} when it does not exist."""
    env = {}
    if not os.path.exists(file):
        return env
    with open(file) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith('#') and '=' in line:
                key, value = line.split('=', 1)
                env[key] = value
    return env


def write(file, env):
    """Writes `env` atomically with mode 0600; a value that would need quoting is an error."""
    lines = []
    for key, value in env.items():
        if not SAFE.match(str(value)):
            sys.exit('env value of %s needs quoting: %r' % (key, value))
        lines.append('%s=%s\n' % (key, value))
    tmp = file + '.tmp'
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as f:
        f.write('# written by scripts/openstack-up.sh; read by the tests via CCM_OPENSTACK_ENV\n')
        f.writelines(lines)
    os.replace(tmp, file)
