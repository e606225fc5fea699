#!/usr/bin/python3
"""scripts/module-cycles.py on small crates written here."""
import importlib.util
import io
import os
import shutil
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    'module_cycles', os.path.join(HERE, '..', 'module-cycles.py'))
cycles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cycles)


def crate(test, files):
    root = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, root)
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
    return root


def run(root):
    return run_args([root])


def run_args(args):
    out = io.StringIO()
    with redirect_stdout(out):
        code = cycles.main(args)
    return code, out.getvalue()


class ModuleCycles(unittest.TestCase):
    def test_siblings_that_use_each_other_are_a_circle(self):
        root = crate(self, {
            'lib.rs': 'mod a;\nmod b;\n',
            'a.rs': 'use crate::b::B;\npub struct A;\n',
            'b.rs': 'pub struct B;\nfn f() { let _ = super::a::A; }\n',
        })
        code, out = run(root)
        self.assertEqual(code, 1)
        self.assertIn('circle of 2: a, b', out)
        self.assertIn('a -> b', out)
        self.assertIn('b -> a', out)

    def test_one_way_and_parent_child_uses_are_not(self):
        root = crate(self, {
            'lib.rs': 'mod a;\nmod b;\nuse a::inner::X;\n',
            'a/mod.rs': 'pub mod inner;\nuse self::inner::X;\nuse crate::b::{B, C};\n',
            'a/inner.rs': 'use super::super::b::B;\nuse super::Y;\npub struct X;\n',
            'b.rs': 'pub struct B;\npub struct C;\n',
        })
        self.assertEqual(run(root), (0, ''))

    def test_comments_strings_and_tests_do_not_count(self):
        root = crate(self, {
            'lib.rs': 'mod a;\nmod b;\n',
            'a.rs': 'use crate::b::B;\n',
            'b.rs': ('// use crate::a::A;\n/* crate::a::A */\n'
                     'const S: &str = "crate::a::A";\nconst R: &str = r#"super::a"#;\n'
                     "const C: char = '\"';\nfn f<'x>(_: &'x str) {}\n"
                     '#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n'),
        })
        self.assertEqual(run(root), (0, ''))

    def test_braced_groups_reach_each_module_they_name(self):
        root = crate(self, {
            'lib.rs': 'mod top;\nmod other;\n',
            'top/mod.rs': 'pub mod x;\n',
            'top/x.rs': 'pub struct X;\n',
            'other.rs': 'use crate::top::{x::X};\n',
        })
        root_code, _ = run(root)
        self.assertEqual(root_code, 0)
        # x naming `other` closes the circle through the braced path.
        with open(os.path.join(root, 'top/x.rs'), 'a') as f:
            f.write('use crate::other;\n')
        code, out = run(root)
        self.assertEqual(code, 1, out)
        self.assertIn('other, top::x', out)

    def test_known_circles_pass_a_new_one_fails_and_a_gone_one_must_be_dropped(self):
        root = crate(self, {
            'lib.rs': 'mod a;\nmod b;\nmod c;\n',
            'a.rs': 'use crate::b::B;\n',
            'b.rs': 'use crate::a::A;\n',
            'c.rs': '',
        })
        known = os.path.join(root, 'known')
        with open(known, 'w') as f:
            f.write('# left to undo\n%s: a, b, c\n' % root)
        self.assertEqual(run_args(['--known', known, root]), (0, ''))
        with open(known, 'w') as f:
            f.write('%s: a, c\n' % root)
        code, out = run_args(['--known', known, root])
        self.assertEqual(code, 1)
        self.assertIn('circle of 2: a, b', out)
        self.assertIn('gone, drop it from the known circles: a, c', out)


if __name__ == '__main__':
    unittest.main()
