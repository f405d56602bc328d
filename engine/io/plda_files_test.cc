// The reading of a PLDA folder: the arrays reach BuildPlda unchanged, the
// digest is that of the two archives, and missing or broken files are
// errors that name the file.
#include "engine/io/plda_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/common/sha256.h"
#include "engine/io/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_data.h"

namespace diarization::io {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string PldaDir() {
  return diarization::testing::SharedModelsDir() + "/community-1-plda";
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

// A copy of the PLDA folder's three files under TEST_TMPDIR.
std::string CopyOfPldaDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f :
       {"xvec_transform.npz", "plda.npz", "eigenvectors_desc.bin"}) {
    fs::copy_file(fs::path(PldaDir()) / f, dir / f);
    // The shared originals are read-only; the tests edit their copies.
    fs::permissions(dir / f, fs::perms::owner_write, fs::perm_options::add);
  }
  return dir.string();
}

TEST(PldaFilesTest, ArraysOfTheArchivesReachTheModel) {
  auto model = LoadPlda(PldaDir());
  ASSERT_TRUE(model.ok()) << model.status();
  auto xvec = ReadNpzFile(PldaDir() + "/xvec_transform.npz");
  auto plda = ReadNpzFile(PldaDir() + "/plda.npz");
  ASSERT_TRUE(xvec.ok() && plda.ok());
  EXPECT_EQ(model->input_dim, 256);
  EXPECT_EQ(model->lda_dim, 128);
  EXPECT_EQ(model->mean1, xvec->at("mean1").ToDouble());
  EXPECT_EQ(model->mean2, xvec->at("mean2").ToDouble());
  EXPECT_EQ(model->lda, xvec->at("lda").ToDouble());
  EXPECT_EQ(model->mu, plda->at("mu").ToDouble());
  EXPECT_EQ(model->sha256, Sha256Hex(Bytes(PldaDir() + "/xvec_transform.npz") +
                                     Bytes(PldaDir() + "/plda.npz")));
}

TEST(PldaFilesTest, MissingArchiveIsNotFoundNamingIt) {
  const std::string dir = CopyOfPldaDir("missing");
  fs::remove(fs::path(dir) / "plda.npz");
  auto model = LoadPlda(dir);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(model.status().message(), HasSubstr("plda.npz"));
}

TEST(PldaFilesTest, ArchiveWithoutAMemberIsInvalidNamingIt) {
  const std::string dir = CopyOfPldaDir("swapped");
  // plda.npz in the place of xvec_transform.npz: it has no 'lda'.
  fs::copy_file(fs::path(dir) / "plda.npz",
                fs::path(dir) / "xvec_transform.npz",
                fs::copy_options::overwrite_existing);
  auto model = LoadPlda(dir);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("xvec_transform.npz"));
  EXPECT_THAT(model.status().message(), HasSubstr("'lda'"));
}

TEST(PldaFilesTest, ShortReferenceEigenvectorsAreInvalidNamingTheFile) {
  const std::string dir = CopyOfPldaDir("short");
  const fs::path eig = fs::path(dir) / "eigenvectors_desc.bin";
  fs::resize_file(eig, fs::file_size(eig) - 8);
  auto model = LoadPlda(dir);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(model.status().message(), HasSubstr("eigenvectors_desc.bin"));
}

TEST(PldaFilesTest, WithoutReferenceEigenvectorsTheModelStillLoads) {
  const std::string dir = CopyOfPldaDir("no_reference");
  fs::remove(fs::path(dir) / "eigenvectors_desc.bin");
  auto without = LoadPlda(dir);
  auto with = LoadPlda(PldaDir());
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(without->phi, with->phi);
  EXPECT_EQ(without->sha256, with->sha256);
}

}  // namespace
}  // namespace diarization::io
