#include "engine/audio/ogg_vorbis_headers.h"

#include <ogg/ogg.h>
#include <vorbis/codec.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace diarization::audio {
namespace {

// Feeds the file to libogg in pieces of this size, so the check never holds
// a second copy of a large upload (the headers are in its first pages).
constexpr size_t kChunk = size_t{64} << 10;

// Owns libogg's and libvorbis's state for one check; the destructor clears
// what was initialised, on every path.
class HeaderParser {
 public:
  HeaderParser() {
    ogg_sync_init(&sync_);
    vorbis_info_init(&info_);
    vorbis_comment_init(&comment_);
  }
  ~HeaderParser() {
    vorbis_comment_clear(&comment_);
    vorbis_info_clear(&info_);
    if (stream_ready_) ogg_stream_clear(&stream_);
    ogg_sync_clear(&sync_);
  }
  HeaderParser(const HeaderParser&) = delete;
  HeaderParser& operator=(const HeaderParser&) = delete;

  absl::Status Run(std::span<const std::byte> bytes) {
    size_t fed = 0;
    while (headers_ < 3) {
      ogg_page page;
      const int got = ogg_sync_pageout(&sync_, &page);
      if (got < 0) continue;  // skipped bytes before a page: libogg resyncs
      if (got == 0) {
        if (fed == bytes.size()) {
          return Bad(absl::StrCat("the file ends after ", headers_,
                                  " of its 3 Vorbis headers"));
        }
        const size_t n = std::min(kChunk, bytes.size() - fed);
        char* buffer = ogg_sync_buffer(&sync_, static_cast<long>(n));
        if (buffer == nullptr) return Bad("libogg could not buffer the file");
        std::memcpy(buffer, bytes.data() + fed, n);
        ogg_sync_wrote(&sync_, static_cast<long>(n));
        fed += n;
        continue;
      }
      if (!stream_ready_) {
        // The first page starts the logical stream libsndfile decodes.
        if (ogg_stream_init(&stream_, ogg_page_serialno(&page)) != 0) {
          return Bad("libogg could not start the stream");
        }
        stream_ready_ = true;
      }
      if (ogg_page_serialno(&page) != stream_.serialno) continue;
      if (ogg_stream_pagein(&stream_, &page) != 0) {
        return Bad("a page of the first stream does not continue it");
      }
      ogg_packet packet;
      while (headers_ < 3) {
        const int p = ogg_stream_packetout(&stream_, &packet);
        if (p == 0) break;  // the packet continues on the next page
        if (p < 0) {
          return Bad(absl::StrCat("Vorbis header ", headers_ + 1,
                                  " has a gap in its pages"));
        }
        if (headers_ == 0 && vorbis_synthesis_idheader(&packet) != 1) {
          // Opus, FLAC in Ogg, ...: libsndfile decides.
          return absl::OkStatus();
        }
        if (const int r = vorbis_synthesis_headerin(&info_, &comment_, &packet);
            r != 0) {
          return Bad(absl::StrCat("Vorbis header ", headers_ + 1,
                                  " does not parse (libvorbis error ", r, ")"));
        }
        ++headers_;
      }
    }
    // What libsndfile sets up next from the headers.
    vorbis_dsp_state dsp;
    if (vorbis_synthesis_init(&dsp, &info_) != 0) {
      return Bad("its Vorbis headers do not set up a decoder");
    }
    vorbis_block block;
    const int block_ok = vorbis_block_init(&dsp, &block);
    if (block_ok == 0) vorbis_block_clear(&block);
    vorbis_dsp_clear(&dsp);
    if (block_ok != 0) return Bad("its Vorbis headers do not set up a decoder");
    return absl::OkStatus();
  }

 private:
  static absl::Status Bad(std::string what) {
    return absl::InvalidArgumentError(
        absl::StrCat("OGG/Vorbis audio is malformed: ", what));
  }

  ogg_sync_state sync_;
  ogg_stream_state stream_;
  bool stream_ready_ = false;
  vorbis_info info_;
  vorbis_comment comment_;
  int headers_ = 0;
};

}  // namespace

absl::Status CheckOggVorbisHeaders(std::span<const std::byte> bytes) {
  HeaderParser parser;
  return parser.Run(bytes);
}

}  // namespace diarization::audio
