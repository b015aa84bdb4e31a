// Package wheels stages a commit's wheels in the store (ReadWheelFile,
// StageWheels) and records which build a commit was measured with
// (BuildRecord), so that every job of the commit installs the same bytes.
package wheels
