// CRC-32C (Castagnoli), the checksum of each checkpoint record.
#pragma once

#include <cstdint>
#include <string_view>

namespace dra::kubeletplugin::internal {

// With SSE4.2's crc32 instruction where the CPU has it, else Crc32cPortable.
uint32_t Crc32c(std::string_view data);
// The table-driven form, exposed for tests.
uint32_t Crc32cPortable(std::string_view data);

}  // namespace dra::kubeletplugin::internal
