// Which kernel cuBLASLt's heuristic picks for a matmul, without running it.
//
// Reads cuBLASLt trace lines (`[cublasLtMatmul] ... Adesc=[...] ... computeDesc=[...] ...
// workSpaceSizeInBytes=N ...`, as CUBLASLT_LOG_LEVEL=5 prints them, or made from such a line
// with other dimensions) on stdin, one per line; for each it rebuilds the descriptors, asks
// cublasLtMatmulAlgoGetHeuristic for its first choice and prints one line:
//   ok <count> then per choice: <algoId> <tile> <stages> <splitK> <reduction> <customOption>
//      <clusterShape> <swizzle> <innerShape> <workspace bytes it needs>
// (enum values as numbers; scripts/lt-heuristic.py names them from cublasLt.h), or
//   err <what went wrong>
// Operand pointers are taken as 256-byte aligned, as fresh PyTorch tensors are.
//
// Build: nvcc -O2 -o lt-heuristic scripts/lt-heuristic.cpp -I<cuda include> <libcublasLt.so> -lcudart
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

static std::map<std::string, std::string> bracket(const std::string& line, const std::string& key) {
    std::map<std::string, std::string> out;
    size_t at = line.find(" " + key + "=[");
    if (at == std::string::npos) return out;
    size_t start = at + key.size() + 3, end = line.find(']', start);
    std::istringstream in(line.substr(start, end - start));
    std::string kv;
    while (in >> kv) {
        size_t eq = kv.find('=');
        if (eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return out;
}

static bool data_type(const std::string& name, cudaDataType_t* t) {
    static const std::map<std::string, cudaDataType_t> names = {
        {"R_16F", CUDA_R_16F}, {"R_16BF", CUDA_R_16BF}, {"R_32F", CUDA_R_32F}, {"R_64F", CUDA_R_64F},
        {"R_8F_E4M3", CUDA_R_8F_E4M3}, {"R_8F_E5M2", CUDA_R_8F_E5M2}, {"R_8I", CUDA_R_8I}, {"R_32I", CUDA_R_32I},
    };
    auto it = names.find(name);
    if (it == names.end()) return false;
    *t = it->second;
    return true;
}

static bool compute_type(const std::string& name, cublasComputeType_t* t) {
    static const std::map<std::string, cublasComputeType_t> names = {
        {"COMPUTE_16F", CUBLAS_COMPUTE_16F}, {"COMPUTE_32F", CUBLAS_COMPUTE_32F},
        {"COMPUTE_32F_FAST_TF32", CUBLAS_COMPUTE_32F_FAST_TF32}, {"COMPUTE_32F_FAST_16F", CUBLAS_COMPUTE_32F_FAST_16F},
        {"COMPUTE_32F_FAST_16BF", CUBLAS_COMPUTE_32F_FAST_16BF}, {"COMPUTE_32F_PEDANTIC", CUBLAS_COMPUTE_32F_PEDANTIC},
        {"COMPUTE_64F", CUBLAS_COMPUTE_64F}, {"COMPUTE_32I", CUBLAS_COMPUTE_32I},
    };
    auto it = names.find(name);
    if (it == names.end()) return false;
    *t = it->second;
    return true;
}

static bool layout(const std::map<std::string, std::string>& d, cublasLtMatrixLayout_t* l, std::string* err) {
    cudaDataType_t t;
    if (!d.count("type") || !data_type(d.at("type"), &t)) {
        *err = "unknown matrix type";
        return false;
    }
    for (auto& kv : d)
        if (kv.first != "type" && kv.first != "rows" && kv.first != "cols" && kv.first != "ld") {
            *err = "unhandled layout attribute " + kv.first;
            return false;
        }
    uint64_t rows = std::stoull(d.at("rows")), cols = std::stoull(d.at("cols"));
    int64_t ld = std::stoll(d.at("ld"));
    return cublasLtMatrixLayoutCreate(l, t, rows, cols, ld) == CUBLAS_STATUS_SUCCESS;
}

int main() {
    cublasLtHandle_t h;
    if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasLtCreate failed\n");
        return 1;
    }
    // LTH_WORKSPACE: the workspace limit for every line (else each line's own);
    // LTH_ALIGN: operand pointer alignment in bytes (256); LTH_COUNT: how many choices to print.
    const char* e = getenv("LTH_WORKSPACE");
    long long workspace_override = e ? atoll(e) : -1;
    e = getenv("LTH_ALIGN");
    int alignment = e ? atoi(e) : 256;
    e = getenv("LTH_COUNT");
    int count = e ? atoi(e) : 1;
    if (count < 1) count = 1;
    if (count > 16) count = 16;
    void* dummy = nullptr;
    cudaMalloc(&dummy, 1 << 20);
    std::string line;
    while (std::getline(std::cin, line)) {
        std::string err;
        auto a = bracket(line, "Adesc"), b = bracket(line, "Bdesc"), c = bracket(line, "Cdesc"), d = bracket(line, "Ddesc");
        auto cd = bracket(line, "computeDesc");
        size_t ws_at = line.find("workSpaceSizeInBytes=");
        uint64_t workspace = ws_at == std::string::npos ? 0 : std::stoull(line.substr(ws_at + 21));
        if (workspace_override >= 0) workspace = (uint64_t)workspace_override;
        cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, ld = nullptr;
        cublasLtMatmulDesc_t desc = nullptr;
        cublasLtMatmulPreference_t pref = nullptr;
        cublasComputeType_t ct;
        cudaDataType_t st;
        bool ok = layout(a, &la, &err) && layout(b, &lb, &err) && layout(c, &lc, &err) && layout(d, &ld, &err);
        if (ok && !(cd.count("computeType") && compute_type(cd["computeType"], &ct) && cd.count("scaleType") && data_type(cd["scaleType"], &st))) {
            ok = false;
            err = "unknown compute or scale type";
        }
        if (ok) ok = cublasLtMatmulDescCreate(&desc, ct, st) == CUBLAS_STATUS_SUCCESS;
        for (auto& kv : cd) {
            if (!ok) break;
            const std::string& k = kv.first;
            const std::string& v = kv.second;
            cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
            if (k == "computeType" || k == "scaleType") continue;
            if (k == "transa" || k == "transb") {
                cublasOperation_t op = v == "OP_T" ? CUBLAS_OP_T : v == "OP_C" ? CUBLAS_OP_C : CUBLAS_OP_N;
                s = cublasLtMatmulDescSetAttribute(desc, k == "transa" ? CUBLASLT_MATMUL_DESC_TRANSA : CUBLASLT_MATMUL_DESC_TRANSB, &op, sizeof(op));
            } else if (k == "epilogue") {
                cublasLtEpilogue_t e;
                if (v == "EPILOGUE_BIAS") e = CUBLASLT_EPILOGUE_BIAS;
                else if (v == "EPILOGUE_DEFAULT") e = CUBLASLT_EPILOGUE_DEFAULT;
                else if (v == "EPILOGUE_RELU_BIAS") e = CUBLASLT_EPILOGUE_RELU_BIAS;
                else if (v == "EPILOGUE_GELU_BIAS") e = CUBLASLT_EPILOGUE_GELU_BIAS;
                else { ok = false; err = "unhandled epilogue " + v; break; }
                s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e));
            } else if (k == "biasPointer") {
                s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dummy, sizeof(dummy));
            } else if (k == "biasDataType") {
                cudaDataType_t t;
                if (!data_type(v, &t)) { ok = false; err = "unknown bias type"; break; }
                s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &t, sizeof(t));
            } else if (k == "aScalePointer" || k == "bScalePointer" || k == "dScalePointer") {
                auto attr = k[0] == 'a' ? CUBLASLT_MATMUL_DESC_A_SCALE_POINTER : k[0] == 'b' ? CUBLASLT_MATMUL_DESC_B_SCALE_POINTER : CUBLASLT_MATMUL_DESC_D_SCALE_POINTER;
                s = cublasLtMatmulDescSetAttribute(desc, attr, &dummy, sizeof(dummy));
            } else if (k == "smCountTarget") {
                int32_t sm = std::stoi(v);
                s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm, sizeof(sm));
            } else if (k == "fastAccumulationFlag") {
                int8_t f = (int8_t)std::stoi(v);
                s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &f, sizeof(f));
            } else {
                ok = false;
                err = "unhandled compute attribute " + k;
                break;
            }
            if (s != CUBLAS_STATUS_SUCCESS) { ok = false; err = "setting " + k + " failed"; }
        }
        if (ok) {
            ok = cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS;
            uint32_t align = (uint32_t)alignment;
            ok = ok && cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)) == CUBLAS_STATUS_SUCCESS;
            for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
                ok = ok && cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)) == CUBLAS_STATUS_SUCCESS;
            if (!ok) err = "preference";
        }
        if (ok) {
            cublasLtMatmulHeuristicResult_t rs[16];
            int found = 0;
            cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, ld, pref, count, rs, &found);
            if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
                ok = false;
                err = "no algorithm (status " + std::to_string((int)s) + ")";
            } else {
                printf("ok %d", found);
                for (int i = 0; i < found; i++) {
                    const cublasLtMatmulAlgo_t* algo = &rs[i].algo;
                    int32_t id = 0;
                    uint32_t tile = 0, stages = 0, split = 0, red = 0, custom = 0, cluster = 0, swz = 0;
                    uint16_t inner = 0;
                    size_t w;
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &w);
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &w);
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &w);
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split), &w);
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof(red), &w);
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof(custom), &w);
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof(cluster), &w);
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof(swz), &w);
                    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, &inner, sizeof(inner), &w);
                    printf(" %d %u %u %d %u %u %u %u %u %zu", id, tile, stages, (int32_t)split, red, custom, cluster, swz, (unsigned)inner, rs[i].workspaceSize);
                }
                printf("\n");
            }
        }
        if (!ok) printf("err %s\n", err.c_str());
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (desc) cublasLtMatmulDescDestroy(desc);
        for (auto l : {la, lb, lc, ld})
            if (l) cublasLtMatrixLayoutDestroy(l);
    }
    fflush(stdout);
    return 0;
}
