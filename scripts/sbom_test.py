"""Tests of the release SBOMs (scripts/sbom) and of their checker (scripts/sbom-check).

Run on a release directory, after scripts/release:

    KCP_RELEASE_DIST=target/dist .venv/bin/python scripts/sbom_test.py

- every SBOM there passes scripts/sbom-check (pyspdxtools, cargo's resolve, the binary, Cargo.lock);
- a couple of well-known crates carry exactly Cargo.lock's checksum (read here with a plain regex,
  not the checker's TOML parser);
- Linux SBOMs hold no Windows-only crate, Windows ones do hold windows-sys, none holds a
  dev-dependency;
- the checker bites: an SBOM missing a crate, carrying a wrong checksum, listing a crate of another
  platform (which the archive's notices then miss too), or invalid SPDX is reported;
- the SBOMs are reproducible: scripts/sbom run again on copies of the archives gives the same bytes.

Without KCP_RELEASE_DIST the tests fail (they do not skip): there is nothing to check.
"""

import datetime
import importlib.machinery
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_checker():
    loader = importlib.machinery.SourceFileLoader("sbom_check", str(ROOT / "scripts" / "sbom-check"))
    spec = importlib.util.spec_from_loader("sbom_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


check = load_checker()
KNOWN = ("serde_json", "ring", "tokio")  # linked into every binary of the workspace


def dist():
    value = os.environ.get("KCP_RELEASE_DIST")
    if not value:
        raise AssertionError("KCP_RELEASE_DIST is not set: run scripts/release --out DIR first, then "
                             "KCP_RELEASE_DIST=DIR .venv/bin/python scripts/sbom_test.py")
    path = pathlib.Path(value)
    if not any(path.glob("*.spdx.json")):
        raise AssertionError(f"{path} holds no .spdx.json: not a release directory of scripts/release")
    return path


def lock_checksum(name):
    """(version, checksum) of every crates.io entry of `name` in Cargo.lock, by regex."""
    text = (ROOT / "Cargo.lock").read_text()
    pattern = re.compile(r'\[\[package\]\]\nname = "' + re.escape(name) + r'"\nversion = "([^"]+)"\n'
                         r'source = "registry\+[^"]+"\nchecksum = "([0-9a-f]{64})"')
    return dict(pattern.findall(text))


def crates(doc):
    return {(p["name"], p["versionInfo"]): p for p in doc["packages"]
            if p["SPDXID"].startswith("SPDXRef-Package-crate-")}


class SbomTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dist = dist()
        cls.docs = {p.name: json.loads(p.read_text()) for p in sorted(cls.dist.glob("*.spdx.json"))}
        cls.released = staticmethod(check.released_resolver(cls.dist))
        cls.lockfile = check.lock()

    def one(self, platform):
        """The ecr SBOM of `platform` (every release has it), its path and its archive."""
        for name in sorted(self.docs):
            if name.startswith("ecr-credential-provider-") and f"-{platform}." in name:
                stem = name.removesuffix(".spdx.json")
                archive = next(self.dist / f"{stem}{ext}" for ext in (".tar.gz", ".zip")
                               if (self.dist / f"{stem}{ext}").exists())
                return self.dist / name, archive
        self.fail(f"no ecr-credential-provider SBOM for {platform} in {self.dist}")

    def mutated(self, platform, change):
        """Problems the checker finds in the `platform` ecr SBOM after change(doc)."""
        sbom, archive = self.one(platform)
        doc = json.loads(sbom.read_text())
        change(doc)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            shutil.copy(archive, tmp / archive.name)
            (tmp / sbom.name).write_text(json.dumps(doc, indent=2))
            (tmp / "SHA256SUMS").write_text(
                "".join(f"{check.sha256(tmp / n)}  {n}\n" for n in sorted([archive.name, sbom.name])))
            return check.check_document(tmp / sbom.name, tmp, check.read_sums(tmp), self.lockfile, self.released)

    def test_release_directory_passes_the_checker(self):
        documents, errors = check.check(self.dist)
        self.assertEqual(errors, [])
        self.assertEqual(len(documents), len(check.release_archives(self.dist)))

    def test_known_crates_carry_cargo_lock_checksums(self):
        for name in KNOWN:
            expected = lock_checksum(name)
            self.assertTrue(expected, f"{name} is not a crates.io crate of Cargo.lock")
            for doc_name, doc in self.docs.items():
                found = {v: p for (n, v), p in crates(doc).items() if n == name}
                self.assertTrue(found, f"{doc_name} does not list {name}")
                for version, p in found.items():
                    self.assertEqual(p["checksums"], [{"algorithm": "SHA256", "checksumValue": expected[version]}],
                                     f"{doc_name}: {name} {version}")
                    self.assertIn({"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                                   "referenceLocator": f"pkg:cargo/{name}@{version}"}, p["externalRefs"])

    def test_platform_and_dev_only_crates(self):
        windows_only = re.compile(r"^(windows-sys|windows-targets|windows_x86_64_gnu|winapi.*)$")
        for doc_name, doc in self.docs.items():
            names = {n for n, _ in crates(doc)}
            self.assertNotIn("kcp-testkit", names, f"{doc_name} lists a dev-dependency")
            if "-linux-" in doc_name:
                self.assertEqual(sorted(filter(windows_only.match, names)), [], doc_name)
            else:
                self.assertIn("windows-sys", names, doc_name)

    def test_binary_package_and_relationships(self):
        for doc_name, doc in self.docs.items():
            root = next(p for p in doc["packages"] if p["SPDXID"] == doc["documentDescribes"][0])
            self.assertEqual(root["licenseDeclared"], "Apache-2.0")
            self.assertEqual(root["checksums"][0]["checksumValue"], check.sha256(self.dist / root["packageFileName"]))
            kinds = {r["relationshipType"] for r in doc["relationships"]}
            self.assertLessEqual({"DESCRIBES", "CONTAINS", "DEPENDS_ON"}, kinds, doc_name)
            created = datetime.datetime.strptime(doc["creationInfo"]["created"], "%Y-%m-%dT%H:%M:%SZ")
            self.assertGreater(created.year, 2000, f"{doc_name}: creation time not from SOURCE_DATE_EPOCH")

    def test_a_missing_crate_is_caught(self):
        def drop(doc):
            gone = {p["SPDXID"] for p in doc["packages"] if p.get("name") == "serde_json"}
            doc["packages"] = [p for p in doc["packages"] if p["SPDXID"] not in gone]
            doc["relationships"] = [r for r in doc["relationships"]
                                    if r["spdxElementId"] not in gone and r["relatedSpdxElement"] not in gone]
        errors = self.mutated("linux-amd64", drop)
        self.assertTrue(any("misses crate serde_json" in e and "cargo resolves" in e for e in errors), errors)
        self.assertTrue(any("misses crate serde_json" in e and "in the binary" in e for e in errors), errors)

    def test_a_wrong_checksum_is_caught(self):
        def corrupt(doc):
            for p in doc["packages"]:
                if p.get("name") == "serde_json":
                    p["checksums"][0]["checksumValue"] = "0" * 64
        errors = self.mutated("linux-amd64", corrupt)
        self.assertTrue(any("serde_json" in e and "is not Cargo.lock's" in e for e in errors), errors)

    def test_a_crate_of_another_platform_is_caught(self):
        version = next(v for (n, v) in self.lockfile if n == "windows-sys")

        def add(doc):
            doc["packages"].append({
                "SPDXID": f"SPDXRef-Package-crate-windows-sys-{version}", "name": "windows-sys",
                "versionInfo": version, "downloadLocation": "NOASSERTION", "filesAnalyzed": False,
                "licenseDeclared": "MIT OR Apache-2.0", "licenseConcluded": "NOASSERTION"})
        errors = self.mutated("linux-amd64", add)
        self.assertTrue(any("windows-sys" in e and "outside the lock file's resolve" in e for e in errors), errors)
        self.assertTrue(any("windows-sys" in e and "does not resolve" in e for e in errors), errors)
        # The archive's notices do not cover it either: the two must list the same crates.
        self.assertTrue(any(f"THIRD-PARTY-NOTICES.txt misses crate windows-sys {version}" in e
                            for e in errors), errors)

    def test_invalid_spdx_is_caught(self):
        def break_licence(doc):
            doc["packages"][1]["licenseDeclared"] = "MIT OR"
        errors = self.mutated("linux-amd64", break_licence)
        self.assertTrue(any("pyspdxtools" in e for e in errors), errors)

    def test_reproducible(self):
        for platform, target in check.TARGETS.items():
            stems = [n.removesuffix(".spdx.json") for n in self.docs if f"-{platform}." in n]
            if not stems:
                continue
            created = self.docs[stems[0] + ".spdx.json"]["creationInfo"]["created"]
            epoch = int(datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ")
                        .replace(tzinfo=datetime.timezone.utc).timestamp())
            with tempfile.TemporaryDirectory() as tmp:
                args = [sys.executable, str(ROOT / "scripts" / "sbom"), "--target", target]
                for stem in stems:
                    archive = next(self.dist / f"{stem}{e}" for e in (".tar.gz", ".zip")
                                   if (self.dist / f"{stem}{e}").exists())
                    shutil.copy(archive, pathlib.Path(tmp) / archive.name)
                    args += ["--archive", f"{check.ARCHIVE.match(stem).group('name')}={tmp}/{archive.name}"]
                subprocess.run(args, check=True, capture_output=True,
                               env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)})
                for stem in stems:
                    again = (pathlib.Path(tmp) / f"{stem}.spdx.json").read_bytes()
                    self.assertEqual(again, (self.dist / f"{stem}.spdx.json").read_bytes(), f"{stem}.spdx.json")


if __name__ == "__main__":
    unittest.main(verbosity=2)
