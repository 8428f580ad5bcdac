# Turns the data file IN into a C source OUT defining
#   const unsigned char SYM[]; const unsigned long SYM_len;
# (SYM defaults to schedsim_catalog_json).
if(NOT SYM)
  set(SYM schedsim_catalog_json)
endif()
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from ${IN}; do not edit. */\n"
  "const unsigned char ${SYM}[] = {\n${bytes}0x00};\n"
  "const unsigned long ${SYM}_len = ${len};\n")
