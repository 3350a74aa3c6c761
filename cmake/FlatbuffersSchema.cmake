# statewatch_flatbuffers_schema(<name> <out_var>): generates the C++ header of
# schema/<name>.fbs at build time (generated/schema/<name>_generated.h in the build tree, never
# committed) and sets <out_var> to that header's path, for the DEPENDS of the custom target
# that the libraries reading it wait on. Call it in the folder that defines that target.
function(statewatch_flatbuffers_schema name out_var)
  set(out_dir ${PROJECT_BINARY_DIR}/generated/schema)
  set(fbs ${PROJECT_SOURCE_DIR}/schema/${name}.fbs)
  add_custom_command(
    OUTPUT ${out_dir}/${name}_generated.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND flatbuffers::flatc --cpp --scoped-enums -o ${out_dir} ${fbs}
    DEPENDS ${fbs}
    COMMENT "flatc: schema/${name}.fbs")
  set(${out_var} ${out_dir}/${name}_generated.h PARENT_SCOPE)
endfunction()
