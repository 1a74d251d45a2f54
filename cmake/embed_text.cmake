# cmake -DINPUT=file -DOUTPUT=file.cpp -DSYMBOL=name -DNAMESPACE=ns -P embed_text.cmake
# Writes a C++ source defining `const char SYMBOL[]` with INPUT's text, so a page, a style
# sheet or a script is edited as what it is and still ships inside the binary.
file(READ "${INPUT}" text)
string(FIND "${text}" ")LGEMBED\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter )LGEMBED\"")
endif()
file(RELATIVE_PATH shown "${CMAKE_CURRENT_LIST_DIR}/.." "${INPUT}")
file(WRITE "${OUTPUT}.tmp" "// Generated from ${shown} by cmake/embed_text.cmake: edit that file.\n"
     "namespace ${NAMESPACE} {\nextern const char ${SYMBOL}[];\nconst char ${SYMBOL}[] = R\"LGEMBED(${text})LGEMBED\";\n}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
