# cisc_bpf_object(<target> <out-dir> <src.c>...): compile eBPF C sources to
# objects with `clang -O2 -g -target bpf`, the way program authors do.
# Creates a custom target <target> whose outputs are <out-dir>/<name>.o.
function(cisc_bpf_object target outdir)
    set(objs)
    foreach(src ${ARGN})
        get_filename_component(name ${src} NAME_WE)
        set(obj ${outdir}/${name}.o)
        add_custom_command(
            OUTPUT ${obj}
            COMMAND ${CMAKE_COMMAND} -E make_directory ${outdir}
            COMMAND ${CLANG_BPF} -O2 -g -target bpf -Wall -Werror
                    -I${PROJECT_SOURCE_DIR}/bpf/include -c ${src} -o ${obj}
            DEPENDS ${src} ${PROJECT_SOURCE_DIR}/bpf/include/cisc_bpf.h
            COMMENT "BPF ${name}.o"
            VERBATIM)
        list(APPEND objs ${obj})
    endforeach()
    add_custom_target(${target} ALL DEPENDS ${objs})
endfunction()
