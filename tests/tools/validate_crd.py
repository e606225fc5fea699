"""Validates the documents kubernetes-validate has no schema for against tests/schemas/.

Usage: validate_crd.py SCHEMA_DIR FILE...   (run by tests/it/validators.rs with the venv from
scripts/test-tools.sh). A document of kind K and apiVersion G/V is checked against
SCHEMA_DIR/<k>_<G>_<V>.json (kind lower-cased); documents without such a file are left to
kubernetes-validate. Prints one line per document, `INFO FILE passed ...` or
`ERROR FILE ...: PATH: MESSAGE` (every error, not just the first); exits 1 on any error.
"""

import ipaddress
import json
import os
import sys

import jsonschema
import yaml

formats = jsonschema.FormatChecker()


# The CRDs check these with CEL isIP()/isCIDR(), which (unlike .masked()) allow host bits.
@formats.checks("ip", raises=ValueError)
def is_ip(value):
    if isinstance(value, str):
        ipaddress.ip_address(value)
    return True


@formats.checks("cidr", raises=ValueError)
def is_cidr(value):
    if isinstance(value, str):
        ipaddress.ip_network(value, strict=False)
    return True


def main(schema_dir, files):
    failed = False
    for name in files:
        with open(name, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        for doc in docs:
            kind, api = str(doc.get("kind")), str(doc.get("apiVersion"))
            schema_path = os.path.join(schema_dir, f"{kind.lower()}_{api.replace('/', '_')}.json")
            if not os.path.exists(schema_path):
                continue
            with open(schema_path, encoding="utf-8") as f:
                validator = jsonschema.Draft202012Validator(json.load(f), format_checker=formats)
            what = f"{kind.lower()}/{(doc.get('metadata') or {}).get('name')}"
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
            for e in errors:
                path = ".".join(str(p) for p in e.absolute_path)
                print(f"ERROR {name} did not validate for resource {what} against "
                      f"{os.path.basename(schema_path)}: {path}: {e.message}")
            if errors:
                failed = True
            else:
                print(f"INFO {name} passed for resource {what} against {os.path.basename(schema_path)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
