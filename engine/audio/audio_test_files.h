// Files for the audio tests: scratch paths, whole-file reads and the command
// line tools (sox, lame) that make the tests' inputs and references, shared by
// the telephony, MP3 and channel tests.
#ifndef DIARIZATION_ENGINE_AUDIO_AUDIO_TEST_FILES_H_
#define DIARIZATION_ENGINE_AUDIO_AUDIO_TEST_FILES_H_

#include <cstddef>
#include <string>
#include <vector>

namespace diarization::audio::testing_files {

// `name` in the test's scratch folder (TEST_TMPDIR, else /tmp).
std::string TempPath(const std::string& name);

// The whole file; an empty vector (and a test failure) when it is missing.
std::vector<std::byte> ReadBytes(const std::string& path);

// Runs `command` through the shell; a fatal test failure when it exits
// non-zero (call with ASSERT_NO_FATAL_FAILURE where the rest depends on it).
void RunCommand(const std::string& command);

// RunCommand("sox " + args).
void Sox(const std::string& args);

}  // namespace diarization::audio::testing_files

#endif  // DIARIZATION_ENGINE_AUDIO_AUDIO_TEST_FILES_H_
