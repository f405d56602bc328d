#!/usr/bin/env bash
# Bazel's --workspace_status_command (.bazelrc): the commit the binaries are
# built from, stamped into //server:build_stamp. "-dirty" marks uncommitted
# changes to tracked files. Outside a git checkout (e.g. a source tarball or
# a Docker context without .git) it uses $DIARIZATION_BUILD_COMMIT, else
# "unknown".
commit=$(git rev-parse HEAD 2>/dev/null) || commit=""
if [[ -n "$commit" ]]; then
  git diff-index --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
else
  commit=${DIARIZATION_BUILD_COMMIT:-unknown}
fi
echo "STABLE_GIT_COMMIT $commit"
