// Package docs holds no code: its tests keep the repository's documents true
// to the code, so that a name, a file or a default that moves shows up as a
// failing test instead of a stale sentence.
//
//   - Every Go name in backquotes of the form `pkg.Name` or `pkg.Type.Member`
//     in README.md, docs/*.md and paper/CLAIMS.md must be declared in the
//     module's package of that name (found with go/parser, so unexported
//     helpers and build-tagged files count too); every repository path in
//     backquotes and every relative link must exist.
//   - The layer list of docs/DESIGN.md must give each package exactly the
//     module packages it imports, and list every package under kafka/.
//   - Every test named in paper/CLAIMS.md must exist in the package its cell
//     names, and every file and identifier of its code column must exist.
//   - Every citation "docs/PROTOCOL.md §N" (or "§N step K") in the code and
//     the documents must land on a section (and step) of docs/PROTOCOL.md, and
//     nothing may cite a document outside the repository.
//   - The worked examples in hex in docs/PROTOCOL.md must be the bytes the
//     real encoders produce.
//   - The settings tables of docs/PROTOCOL.md must name every property the
//     code reads, with the code's defaults, and agree with
//     kafka/config/server.properties.
//
// Run them with `go test ./docs`; -v lists what was checked.
package docs
