# Writes the first ```cpp block after the heading SECTION (default "## Embedding") of the
# Markdown file README to OUT, so that an example users copy is compiled and run by the test
# suite exactly as written.
#   cmake -DREADME=README.md -DOUT=readme_example.cc -P extract_readme_example.cmake
#   cmake -DREADME=docs/embedding.md "-DSECTION=## A complete program" -DOUT=... -P ...
if(NOT DEFINED SECTION)
  set(SECTION "## Embedding")
endif()
file(READ "${README}" text)
string(FIND "${text}" "${SECTION}" section)
if(section EQUAL -1)
  message(FATAL_ERROR "${README} has no '${SECTION}' section")
endif()
string(SUBSTRING "${text}" ${section} -1 text)
string(FIND "${text}" "```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${README}'s '${SECTION}' section has no ```cpp block")
endif()
math(EXPR start "${start} + 7")
string(SUBSTRING "${text}" ${start} -1 text)
string(FIND "${text}" "```" end)
string(SUBSTRING "${text}" 0 ${end} code)
file(WRITE "${OUT}.tmp" "${code}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
