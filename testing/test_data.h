// Locates golden test data for tests (../shared/data, see its PROVENANCE.md).
#ifndef DIARIZATION_TESTING_TEST_DATA_H_
#define DIARIZATION_TESTING_TEST_DATA_H_

#include <string>

namespace diarization::testing {

// The golden data folder: $DIARIZATION_TEST_DATA, else ../shared/data beside
// the source tree. Aborts the test binary with a clear message when the
// folder does not exist: tests must fail, not skip, without their data.
std::string TestDataDir();

// The shared models folder: $DIARIZATION_MODELS_DIR, else ../shared/models.
std::string SharedModelsDir();

// The repository's source root (for committed references under tests/ etc.).
std::string SourceRoot();

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_TEST_DATA_H_
