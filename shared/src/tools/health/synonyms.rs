//! A built-in synonym table of common lab indicators with their LOINC codes, so a
//! keyword such as "glycated haemoglobin" finds readings uploaded as "HbA1c".
//!
//! Owns only names and codes; matching rules live in `matching`.

/// One indicator: its LOINC code, a display name, and the names people use for it
/// (any language; compared as indicator keys).
pub(super) struct LabIndicator {
    pub loinc: &'static str,
    pub name: &'static str,
    pub names: &'static [&'static str],
}

pub(super) const LAB_INDICATORS: &[LabIndicator] = &[
    LabIndicator {
        loinc: "4548-4",
        name: "Hemoglobin A1c",
        names: &[
            "hba1c",
            "a1c",
            "hemoglobin a1c",
            "haemoglobin a1c",
            "glycated hemoglobin",
            "glycated haemoglobin",
            "glycosylated hemoglobin",
            "glycohemoglobin",
            "糖化血红蛋白",
            "糖化血紅蛋白",
        ],
    },
    LabIndicator {
        loinc: "2345-7",
        name: "Glucose",
        names: &[
            "glucose",
            "blood glucose",
            "blood sugar",
            "fasting glucose",
            "fasting blood glucose",
            "fbg",
            "fpg",
            "glu",
            "血糖",
            "空腹血糖",
        ],
    },
    LabIndicator {
        loinc: "2093-3",
        name: "Total cholesterol",
        names: &[
            "total cholesterol",
            "cholesterol",
            "tc",
            "chol",
            "总胆固醇",
            "總膽固醇",
        ],
    },
    LabIndicator {
        loinc: "13457-7",
        name: "LDL cholesterol",
        names: &[
            "ldl",
            "ldl c",
            "ldl cholesterol",
            "low density lipoprotein",
            "bad cholesterol",
            "低密度脂蛋白",
            "低密度脂蛋白胆固醇",
        ],
    },
    LabIndicator {
        loinc: "2085-9",
        name: "HDL cholesterol",
        names: &[
            "hdl",
            "hdl c",
            "hdl cholesterol",
            "high density lipoprotein",
            "good cholesterol",
            "高密度脂蛋白",
            "高密度脂蛋白胆固醇",
        ],
    },
    LabIndicator {
        loinc: "2571-8",
        name: "Triglycerides",
        names: &[
            "triglycerides",
            "triglyceride",
            "tg",
            "trig",
            "甘油三酯",
            "三酸甘油酯",
        ],
    },
    LabIndicator {
        loinc: "2160-0",
        name: "Creatinine",
        names: &["creatinine", "cr", "crea", "serum creatinine", "肌酐"],
    },
    LabIndicator {
        loinc: "33914-3",
        name: "eGFR",
        names: &[
            "egfr",
            "gfr",
            "estimated gfr",
            "glomerular filtration rate",
            "肾小球滤过率",
        ],
    },
    LabIndicator {
        loinc: "3094-0",
        name: "Urea nitrogen",
        names: &[
            "bun",
            "urea nitrogen",
            "blood urea nitrogen",
            "urea",
            "尿素氮",
        ],
    },
    LabIndicator {
        loinc: "3084-1",
        name: "Uric acid",
        names: &["uric acid", "urate", "ua", "尿酸"],
    },
    LabIndicator {
        loinc: "1742-6",
        name: "ALT",
        names: &[
            "alt",
            "sgpt",
            "alanine aminotransferase",
            "alanine transaminase",
            "谷丙转氨酶",
            "丙氨酸氨基转移酶",
        ],
    },
    LabIndicator {
        loinc: "1920-8",
        name: "AST",
        names: &[
            "ast",
            "sgot",
            "aspartate aminotransferase",
            "aspartate transaminase",
            "谷草转氨酶",
            "天门冬氨酸氨基转移酶",
        ],
    },
    LabIndicator {
        loinc: "6768-6",
        name: "Alkaline phosphatase",
        names: &["alp", "alk phos", "alkaline phosphatase", "碱性磷酸酶"],
    },
    LabIndicator {
        loinc: "1975-2",
        name: "Total bilirubin",
        names: &["bilirubin", "total bilirubin", "tbil", "总胆红素"],
    },
    LabIndicator {
        loinc: "1751-7",
        name: "Albumin",
        names: &["albumin", "alb", "白蛋白"],
    },
    LabIndicator {
        loinc: "718-7",
        name: "Hemoglobin",
        names: &["hemoglobin", "haemoglobin", "hgb", "hb", "血红蛋白"],
    },
    LabIndicator {
        loinc: "6690-2",
        name: "White blood cells",
        names: &[
            "wbc",
            "white blood cells",
            "white blood cell count",
            "leukocytes",
            "白细胞",
            "白细胞计数",
        ],
    },
    LabIndicator {
        loinc: "789-8",
        name: "Red blood cells",
        names: &[
            "rbc",
            "red blood cells",
            "red blood cell count",
            "erythrocytes",
            "红细胞",
        ],
    },
    LabIndicator {
        loinc: "777-3",
        name: "Platelets",
        names: &[
            "platelets",
            "plt",
            "platelet count",
            "thrombocytes",
            "血小板",
        ],
    },
    LabIndicator {
        loinc: "4544-3",
        name: "Hematocrit",
        names: &["hematocrit", "haematocrit", "hct", "红细胞压积"],
    },
    LabIndicator {
        loinc: "3016-3",
        name: "TSH",
        names: &[
            "tsh",
            "thyrotropin",
            "thyroid stimulating hormone",
            "促甲状腺激素",
        ],
    },
    LabIndicator {
        loinc: "3024-7",
        name: "Free T4",
        names: &["free t4", "ft4", "free thyroxine", "游离甲状腺素"],
    },
    LabIndicator {
        loinc: "1989-3",
        name: "Vitamin D (25-OH)",
        names: &[
            "vitamin d",
            "25 oh vitamin d",
            "25 hydroxyvitamin d",
            "vit d",
            "维生素d",
        ],
    },
    LabIndicator {
        loinc: "2132-9",
        name: "Vitamin B12",
        names: &["vitamin b12", "b12", "cobalamin", "维生素b12"],
    },
    LabIndicator {
        loinc: "2276-4",
        name: "Ferritin",
        names: &["ferritin", "铁蛋白"],
    },
    LabIndicator {
        loinc: "1988-5",
        name: "C-reactive protein",
        names: &["crp", "c reactive protein", "hs crp", "hscrp", "c反应蛋白"],
    },
    LabIndicator {
        loinc: "2951-2",
        name: "Sodium",
        names: &["sodium", "na", "钠"],
    },
    LabIndicator {
        loinc: "2823-3",
        name: "Potassium",
        names: &["potassium", "k", "钾"],
    },
    LabIndicator {
        loinc: "20448-7",
        name: "Insulin",
        names: &["insulin", "fasting insulin", "胰岛素"],
    },
    LabIndicator {
        loinc: "8480-6",
        name: "Systolic blood pressure",
        names: &["systolic", "systolic blood pressure", "sbp", "收缩压"],
    },
    LabIndicator {
        loinc: "8462-4",
        name: "Diastolic blood pressure",
        names: &["diastolic", "diastolic blood pressure", "dbp", "舒张压"],
    },
    LabIndicator {
        loinc: "8867-4",
        name: "Heart rate",
        names: &["heart rate", "pulse", "hr", "resting heart rate", "心率"],
    },
    LabIndicator {
        loinc: "29463-7",
        name: "Body weight",
        names: &["weight", "body weight", "体重"],
    },
    LabIndicator {
        loinc: "39156-5",
        name: "Body mass index",
        names: &["bmi", "body mass index", "体重指数"],
    },
    // The wearable indicators of Apple Health exports (upload/apple_health.rs).
    LabIndicator {
        loinc: "40443-4",
        name: "Resting heart rate",
        names: &["resting heart rate", "rhr", "resting pulse", "静息心率"],
    },
    LabIndicator {
        loinc: "80404-7",
        name: "Heart rate variability SDNN",
        names: &[
            "hrv",
            "heart rate variability",
            "heart rate variability sdnn",
            "sdnn",
            "心率变异性",
        ],
    },
    LabIndicator {
        loinc: "55423-8",
        name: "Steps",
        names: &["steps", "step count", "daily steps", "步数"],
    },
    LabIndicator {
        loinc: "41982-0",
        name: "Body fat percentage",
        names: &["body fat", "body fat percentage", "体脂率"],
    },
    LabIndicator {
        loinc: "59408-5",
        name: "Oxygen saturation",
        names: &[
            "spo2",
            "oxygen saturation",
            "blood oxygen",
            "o2 saturation",
            "血氧",
            "血氧饱和度",
        ],
    },
    LabIndicator {
        loinc: "9279-1",
        name: "Respiratory rate",
        names: &[
            "respiratory rate",
            "breathing rate",
            "respiration rate",
            "呼吸频率",
        ],
    },
];
