#!/usr/bin/env python3
"""Validates JSON documents against a JSON schema: validate.py SCHEMA DOCUMENT...

Prints one line per error (document, path, message) and exits 1 if there is any; 0 if all
are valid. Uses python3-jsonschema (Debian), with the schema's own draft."""
import json
import sys

import jsonschema


def main() -> int:
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    errors = 0
    for path in sys.argv[2:]:
        document = json.load(open(path, encoding="utf-8"))
        for error in validator.iter_errors(document):
            where = "/".join(str(part) for part in error.absolute_path)
            print(f"{path}: {where}: {error.message}")
            errors += 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
