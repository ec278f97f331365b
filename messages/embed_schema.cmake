# Writes the schema text into a C++ source, so the JSON view needs no file at run time.
# Usage: cmake -DIN=colony.fbs -DOUT=schema_text.cpp -P embed_schema.cmake
file(READ ${IN} text)
file(WRITE ${OUT} "// Generated from colony.fbs by messages/embed_schema.cmake. Do not edit.\n"
  "namespace colony::messages { extern const char* const schema_text; "
  "const char* const schema_text = R\"colonyfbs(${text})colonyfbs\"; }\n")
